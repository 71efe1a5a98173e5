"""What a tool says when its input is wrong: the loop shows the message to the model as the observation."""

from olakit.errors import DataError


class ToolError(DataError):
    """A tool's input it cannot use: the message says what is wrong."""
