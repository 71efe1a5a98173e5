"""`olakit data fetch` against a real HTTP server on 127.0.0.1 that mirrors ../shared/data by upstream path."""

import http.server
import threading
from urllib.parse import unquote

import pytest

from olakit.data.fetch import fetch, file_url, load_manifest, verify
from olakit.errors import DataError


@pytest.fixture
def mirror(data_dir):
    """Serve each manifest file at /{repo}/{commit}/{upstream_path}; `corrupt` lists paths to serve damaged."""
    manifest = load_manifest()
    routes = {"/" + file_url(e, "", manifest["url_template"]).lstrip("/"): e["path"] for e in manifest["files"]}
    state = {"corrupt": set(), "requests": 0}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            state["requests"] += 1
            rel = routes.get(unquote(self.path))
            if rel is None:
                self.send_error(404)
                return
            body = (data_dir / rel).read_bytes()
            if rel in state["corrupt"]:
                body = body[:-10] + b"0123456789"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", state, manifest
    server.shutdown()
    server.server_close()


def test_fetch_downloads_and_verifies_everything(tmp_path, mirror, data_dir):
    url, state, manifest = mirror
    status = fetch(tmp_path, base_url=url)
    assert len(status) == len(manifest["files"]) == 46 and set(status.values()) == {"fetched"}
    assert verify(tmp_path) == []
    assert (tmp_path / "aqua/test.json").read_bytes() == (data_dir / "aqua/test.json").read_bytes()
    # the fetched directory works as a data directory
    from olakit.data.loaders import load_questions

    assert len(load_questions("aqua", "test", tmp_path)) == 254
    before = state["requests"]
    assert set(fetch(tmp_path, base_url=url).values()) == {"present"}
    assert state["requests"] == before  # nothing downloaded twice


def test_fetch_rejects_a_corrupt_file_and_keeps_nothing_of_it(tmp_path, mirror):
    url, state, _ = mirror
    state["corrupt"].add("aqua/test.json")
    with pytest.raises(
        DataError,
        match=r"aqua/test\.json: sha256 [0-9a-f]{64} from http://127\.0\.0\.1:\d+/deepmind/AQuA/"
        r"26b64ed1f22208c6742f47df547dfd65088ec30d/test\.json differs",
    ):
        fetch(tmp_path, base_url=url)
    assert not (tmp_path / "aqua/test.json").exists() and not (tmp_path / "aqua/test.json.part").exists()
    assert (tmp_path / "aqua/dev.json").is_file()  # fetched before the bad one, and good
    assert "aqua/test.json" in verify(tmp_path)


def test_fetch_reports_an_unreachable_file(tmp_path, mirror):
    url, _, _ = mirror
    with pytest.raises(DataError, match=r"aqua/dev\.json: download from .* failed"):
        fetch(tmp_path, base_url=url + "/wrong-prefix")
    assert not any(tmp_path.rglob("*.part"))
