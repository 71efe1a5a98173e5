"""What a tool says when it cannot give a result: the loop shows the message to the model as the observation and
records ``status`` in the trace."""

from olakit.errors import DataError


class ToolError(DataError):
    """A tool's input it cannot use, or a run that went wrong: the message says what; ``status`` is ``error`` or
    the sandbox's (``timeout``, ``memory``, ``output``, ``blocked``)."""

    def __init__(self, message: str, status: str = "error"):
        super().__init__(message)
        self.status = status
