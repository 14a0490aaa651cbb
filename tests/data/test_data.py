"""Tests for biaskit.data.downloads: downloads from file:// and a local HTTP server, checksums, TOFU, the CLI.

Never touches the internet: a ThreadingHTTPServer on 127.0.0.1 serves a temporary folder.
"""

from __future__ import annotations

import hashlib
import io
import os
import threading
import zipfile
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from biaskit.__main__ import main as cli_main
from biaskit.data import downloads as D


class RangeHandler(SimpleHTTPRequestHandler):
    """Static files with HTTP Range support (bytes=N-) and a request log."""

    requests: list[tuple[str, str | None]]

    def log_message(self, *args):  # keep pytest output clean
        pass

    def do_GET(self):
        self.requests.append((self.path, self.headers.get("Range")))
        path = Path(self.translate_path(self.path))
        if not path.is_file():
            self.send_error(404, "not found")
            return
        body = path.read_bytes()
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes="):
            start = int(rng[6:].split("-")[0])
            if start >= len(body):
                self.send_error(416, "range not satisfiable")
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
            body = body[start:]
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class NoRangeHandler(RangeHandler):
    """Ignores Range requests, like many simple servers: always 200 with the whole file."""

    def do_GET(self):
        self.requests.append((self.path, self.headers.get("Range")))
        path = Path(self.translate_path(self.path))
        body = path.read_bytes()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _serve(directory: Path, handler_cls):
    log: list = []
    handler = type("H", (handler_cls,), {"requests": log})
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(handler, directory=str(directory)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, thread, log


@pytest.fixture
def http_dir(tmp_path):
    root = tmp_path / "www"
    root.mkdir()
    server, thread, log = _serve(root, RangeHandler)
    yield root, f"http://127.0.0.1:{server.server_address[1]}", log
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


PAYLOAD = os.urandom(3 * (1 << 20) + 12345)  # > 1 chunk so that progress/resume paths are exercised


# ----------------------------------------------------------------------------- download()


def test_file_url_download_checksum_and_cache(tmp_path):
    src = tmp_path / "src.bin"
    src.write_bytes(PAYLOAD)
    dest = tmp_path / "out" / "x.bin"
    got = D.download(src.as_uri(), dest, sha256=_sha(PAYLOAD), progress=False)
    assert got == dest and dest.read_bytes() == PAYLOAD
    assert not dest.with_name("x.bin.part").exists()
    src.unlink()  # cache hit: no need for the source any more
    assert D.download(src.as_uri(), dest, sha256=_sha(PAYLOAD).upper(), progress=False) == dest


def test_checksum_mismatch_removes_partial_file(tmp_path):
    src = tmp_path / "src.bin"
    src.write_bytes(b"hello world")
    dest = tmp_path / "y.bin"
    with pytest.raises(D.ChecksumError, match="checksum mismatch"):
        D.download(src.as_uri(), dest, sha256="0" * 64, progress=False)
    assert not dest.exists() and not dest.with_name("y.bin.part").exists()


def test_default_dest_is_cache(tmp_path):
    src = tmp_path / "file name.txt"
    src.write_bytes(b"abc")
    got = D.download(src.as_uri(), progress=False)
    assert got.parent == D.cache_dir() / "downloads" and got.name == "file name.txt"


def test_corrupted_cache_is_refetched(tmp_path):
    src = tmp_path / "src.bin"
    src.write_bytes(b"good bytes")
    dest = tmp_path / "z.bin"
    dest.write_bytes(b"corrupted")
    D.download(src.as_uri(), dest, sha256=_sha(b"good bytes"), progress=False)
    assert dest.read_bytes() == b"good bytes"


def test_file_url_resume(tmp_path):
    src = tmp_path / "src.bin"
    src.write_bytes(PAYLOAD)
    dest = tmp_path / "r.bin"
    dest.with_name("r.bin.part").write_bytes(PAYLOAD[:1000])
    D.download(src.as_uri(), dest, sha256=_sha(PAYLOAD), progress=False)
    assert dest.read_bytes() == PAYLOAD


def test_http_download_and_resume(http_dir, tmp_path):
    root, base, log = http_dir
    (root / "big.bin").write_bytes(PAYLOAD)
    dest = tmp_path / "big.bin"
    D.download(f"{base}/big.bin", dest, sha256=_sha(PAYLOAD), progress=False)
    assert dest.read_bytes() == PAYLOAD and log == [("/big.bin", None)]
    # resume from an interrupted download: only the missing bytes are requested
    dest.unlink()
    dest.with_name("big.bin.part").write_bytes(PAYLOAD[:500_000])
    D.download(f"{base}/big.bin", dest, sha256=_sha(PAYLOAD), progress=False)
    assert dest.read_bytes() == PAYLOAD and log[-1] == ("/big.bin", "bytes=500000-")
    # idempotent: a second call is a cache hit, no request
    n = len(log)
    D.download(f"{base}/big.bin", dest, sha256=_sha(PAYLOAD), progress=False)
    assert len(log) == n


def test_http_server_without_range_restarts(tmp_path):
    root = tmp_path / "www"
    root.mkdir()
    (root / "f.bin").write_bytes(PAYLOAD)
    server, thread, _ = _serve(root, NoRangeHandler)
    try:
        dest = tmp_path / "f.bin"
        dest.with_name("f.bin.part").write_bytes(b"garbage that is not a prefix")
        url = f"http://127.0.0.1:{server.server_address[1]}/f.bin"
        D.download(url, dest, sha256=_sha(PAYLOAD), progress=False)
        assert dest.read_bytes() == PAYLOAD
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_http_errors(http_dir, tmp_path):
    _, base, _ = http_dir
    with pytest.raises(ConnectionError, match="HTTP 404"):
        D.download(f"{base}/missing.bin", tmp_path / "m.bin", progress=False)
    with pytest.raises(ConnectionError, match="could not download"):
        D.download("http://127.0.0.1:1/nothing.bin", tmp_path / "n.bin", timeout=5, progress=False)
    with pytest.raises(ValueError, match="unsupported URL scheme"):
        D.download("ftp://example.org/x.bin", tmp_path / "f.bin", progress=False)
    with pytest.raises(FileNotFoundError):
        D.download((tmp_path / "absent.bin").as_uri(), tmp_path / "a.bin", progress=False)


# ----------------------------------------------------------------------------- download_europarl()


def _opus_zip(pair: str, spanish: str) -> bytes:
    buf = io.BytesIO()
    other = pair.replace("es", "").strip("-")
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(f"Europarl.{pair}.es", spanish)
        zf.writestr(f"Europarl.{pair}.{other}", "other language\n")
        zf.writestr("README", "test archive\n")
    return buf.getvalue()


def test_download_europarl_tofu(http_dir, tmp_path, caplog):
    root, base, log = http_dir
    zips = {
        "bg-es": _opus_zip("bg-es", "Primera frase del Parlamento.\nSegunda frase.\n"),
        "en-es": _opus_zip("en-es", "La señora Presidenta abre la sesión.\n"),
    }
    for pair, blob in zips.items():
        (root / f"{pair}.txt.zip").write_bytes(blob)
    dest = tmp_path / "europarl"
    with caplog.at_level("WARNING"):
        paths = D.download_europarl(base_url=base, dest_dir=dest, progress=False)
    assert paths["bg-es"] == dest / "Europarl-bg-es-es.txt"
    assert paths["en-es"].read_text(encoding="utf-8") == "La señora Presidenta abre la sesión.\n"
    assert "trust on first use" in caplog.text
    sums = D.read_sha256sums(dest / "SHA256SUMS")
    assert sums == {f"{p}.txt.zip": _sha(b) for p, b in zips.items()}
    # second call: everything cached and verified, no request, SHA256SUMS unchanged
    n = len(log)
    D.download_europarl(base_url=base, dest_dir=dest, progress=False)
    assert len(log) == n and D.read_sha256sums(dest / "SHA256SUMS") == sums
    # the upstream file changes after first use: the re-download must fail the TOFU check
    (dest / "bg-es.txt.zip").unlink()
    (root / "bg-es.txt.zip").write_bytes(_opus_zip("bg-es", "Texto cambiado.\n"))
    with pytest.raises(D.ChecksumError):
        D.download_europarl(("bg-es",), base_url=base, dest_dir=dest, progress=False)
    assert not (dest / "bg-es.txt.zip").exists()


def test_download_europarl_file_url_and_corpus_loading(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "bg-es.txt.zip").write_bytes(_opus_zip("bg-es", "El niño y la niña hablan.\n"))
    (mirror / "en-es.txt.zip").write_bytes(_opus_zip("en-es", "Él vota; ella también.\n"))
    paths = D.download_europarl(base_url=mirror.as_uri(), progress=False)
    assert paths["bg-es"].parent == D.europarl_dir()
    from biaskit.data.corpus import load_corpus

    assert load_corpus("europarl-es-full", cache=False) == [
        ["niño", "niña", "hablan"],
        ["él", "vota", "ella"],
    ]


def test_download_europarl_bad_input(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    with pytest.raises(ValueError, match="pair must look like"):
        D.download_europarl(("bg-fr",), base_url=mirror.as_uri(), dest_dir=tmp_path / "e")
    with pytest.raises(ValueError, match="empty"):
        D.download_europarl((), base_url=mirror.as_uri(), dest_dir=tmp_path / "e")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("README", "no Spanish side here")
    (mirror / "bg-es.txt.zip").write_bytes(buf.getvalue())
    with pytest.raises(ValueError, match=r"no member 'Europarl\.bg-es\.es'"):
        D.download_europarl("bg-es", base_url=mirror.as_uri(), dest_dir=tmp_path / "e", progress=False)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "SHA256SUMS").write_text("not a checksum line\n", encoding="utf-8")
    with pytest.raises(ValueError, match="malformed"):
        D.read_sha256sums(tmp_path / "bad" / "SHA256SUMS")


# ----------------------------------------------------------------------------- CLI


def test_cli_download_and_corpora(tmp_path, capsys):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "bg-es.txt.zip").write_bytes(_opus_zip("bg-es", "Una frase.\n"))
    rc = cli_main(
        [
            "download-europarl",
            "--pairs",
            "bg-es",
            "--base-url",
            mirror.as_uri(),
            "--dest",
            str(tmp_path / "d"),
        ]
    )
    assert rc == 0
    assert "Europarl-bg-es-es.txt" in capsys.readouterr().out
    assert (tmp_path / "d" / "Europarl-bg-es-es.txt").read_text(encoding="utf-8") == "Una frase.\n"
    assert cli_main(["corpora"]) == 0
    assert "europarl-es-sample" in capsys.readouterr().out
    rc = cli_main(
        [
            "download-europarl",
            "--pairs",
            "en-es",
            "--base-url",
            mirror.as_uri(),
            "--dest",
            str(tmp_path / "d"),
        ]
    )
    assert rc == 1 and "error:" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli_main([])
