#!/usr/bin/env python3
"""A mock Hugging Face Hub on loopback for the `thintensor pull` tests (stdlib only).

Serves one model folder (e.g. ../shared/models/tinystories-656k) as repo ORG/NAME, plus a few
synthetic files that the default download set must skip or take, through the two endpoints pull
uses:
  GET /api/models/ORG/NAME/revision/REV[?blobs=true]   -> {"id", "sha", "siblings": [...]}
  GET /ORG/NAME/resolve/REV/PATH                        -> 200 for git files (ETag = blob id),
                                                           302 to the "CDN" for LFS (*.safetensors, *.bin)
The CDN is a second server on another loopback address (127.0.0.2), so a request that reaches it
with an Authorization header shows the token was forwarded across hosts. Both honour Range.
Every request is logged as one JSON line (server, method, path, range, auth) for the tests to read.

Failure modes (--mode, repeatable):
  token=T           /api and /resolve answer 401 unless "Authorization: Bearer T"
  drop-once=PATH    the first download of PATH sends half of it and closes the connection
  die-mid=PATH      the first download of PATH sends half of it and the whole server exits
  bad-sha=PATH      PATH is served with one byte flipped (the listed sha256 stays the true one)
  no-range=PATH     Range requests for PATH are answered 200 with the whole file
  update=PATH       a newer commit: PATH has other bytes (same size), listed with their true sha256
  evil              the file list also holds "../evil.json"
The server exits by itself after --lifetime seconds.
"""
import argparse
import hashlib
import json
import os
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

LFS_SUFFIXES = (".safetensors", ".bin")


def git_blob_id(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class Repo:
    def __init__(self, root, evil, updated):
        self.files = {}
        for dirpath, _, names in os.walk(root):
            for n in names:
                full = os.path.join(dirpath, n)
                with open(full, "rb") as f:
                    self.files[os.path.relpath(full, root)] = f.read()
        # Files a real repo has beside the model: pull must skip the first three by default.
        self.files["pytorch_model.bin"] = bytes(range(256)) * 8
        self.files["README.md"] = b"# tinystories\n"
        self.files[".gitattributes"] = b"*.safetensors filter=lfs diff=lfs merge=lfs -text\n"
        self.files["extra/notes.txt"] = b"a file in a subfolder, in the default set (*.txt)\n"
        if evil:
            self.files["../evil.json"] = b"{}\n"
        for path in updated:
            data = self.files[path]
            self.files[path] = bytes([data[0] ^ 0xFF]) + data[1:]
        h = hashlib.sha1()
        for path in sorted(self.files):
            h.update(path.encode() + b"\0" + git_blob_id(self.files[path]).encode())
        self.commit = h.hexdigest()

    @staticmethod
    def is_lfs(path):
        return path.endswith(LFS_SUFFIXES)

    def siblings(self, blobs):
        out = []
        for path in sorted(self.files):
            data = self.files[path]
            s = {"rfilename": path}
            if blobs:
                s["size"] = len(data)
                s["blobId"] = git_blob_id(data)
                if self.is_lfs(path):
                    s["lfs"] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
            out.append(s)
        return out


class State:
    def __init__(self, args):
        self.repo_id = args.repo
        self.modes = {}
        for m in args.mode:
            k, _, v = m.partition("=")
            self.modes.setdefault(k, set()).add(v)
        self.repo = Repo(args.root, "evil" in self.modes, self.modes.get("update", ()))
        self.token = next(iter(self.modes.get("token", [])), None)
        self.fired = set()  # (mode, path) already triggered: "once" modes
        self.lock = threading.Lock()
        self.log = open(args.log, "a", buffering=1)
        self.cdn_base = None

    def once(self, mode, path):
        with self.lock:
            if path in self.modes.get(mode, ()) and (mode, path) not in self.fired:
                self.fired.add((mode, path))
                return True
        return False

    def record(self, server, handler):
        line = json.dumps({"server": server, "method": handler.command, "path": handler.path,
                           "range": handler.headers.get("Range"), "auth": handler.headers.get("Authorization")})
        with self.lock:
            self.log.write(line + "\n")


def make_handler(state, role):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):  # the JSON log replaces the default stderr lines
            pass

        def send(self, status, body=b"", headers=None, content_type="application/json"):
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def error(self, status, code, message):
            self.send(status, json.dumps({"error": message}).encode(), {"X-Error-Code": code})

        def authorized(self):
            return state.token is None or self.headers.get("Authorization") == "Bearer " + state.token

        def do_HEAD(self):
            self.do_GET()

        def do_GET(self):
            state.record(role, self)
            url = urlsplit(self.path)
            path = unquote(url.path)
            if role == "cdn":
                return self.cdn(path)
            if path.startswith("/api/models/"):
                return self.model_info(path[len("/api/models/"):], "blobs=true" in url.query)
            prefix = "/" + state.repo_id + "/resolve/"
            if path.startswith(prefix):
                rev, _, file = path[len(prefix):].partition("/")
                return self.resolve(rev, file)
            if path.startswith("/") and "/resolve/" in path:
                return self.error(404, "RepoNotFound", "Repository not found")
            self.error(404, "EntryNotFound", "no such endpoint")

        def check_revision(self, rev):
            return rev in ("main", state.repo.commit)

        def model_info(self, rest, blobs):
            repo, sep, rev = rest.partition("/revision/")
            if repo != state.repo_id:
                return self.error(404, "RepoNotFound", "Repository not found")
            if not self.authorized():
                return self.error(401, "", "Invalid credentials in Authorization header")
            rev = rev or "main"
            if not self.check_revision(rev):
                return self.error(404, "RevisionNotFound", "Invalid rev id: " + rev)
            body = {"id": repo, "modelId": repo, "sha": state.repo.commit, "siblings": state.repo.siblings(blobs)}
            self.send(200, json.dumps(body).encode())

        def resolve(self, rev, file):
            if not self.authorized():
                return self.error(401, "", "Invalid credentials in Authorization header")
            if not self.check_revision(rev):
                return self.error(404, "RevisionNotFound", "Invalid rev id: " + rev)
            data = state.repo.files.get(file)
            if data is None:
                return self.error(404, "EntryNotFound", "Entry not found")
            common = {"X-Repo-Commit": state.repo.commit}
            if state.repo.is_lfs(file):
                sha = hashlib.sha256(data).hexdigest()
                # The Hub answers 302 with the LFS id and size, and a signed URL on the CDN host.
                common.update({"X-Linked-Etag": '"%s"' % sha, "X-Linked-Size": str(len(data)),
                               "ETag": '"%s"' % git_blob_id(data),
                               "Location": "%s/lfs/%s?file=%s&sig=mock" % (state.cdn_base, sha, file)})
                return self.send(302, b"", common, "text/plain")
            common["ETag"] = '"%s"' % git_blob_id(data)
            self.content(file, data, common)

        def cdn(self, path):
            q = urlsplit(self.path).query
            file = dict(kv.partition("=")[::2] for kv in q.split("&")).get("file", "")
            data = state.repo.files.get(unquote(file))
            if not path.startswith("/lfs/") or data is None or hashlib.sha256(data).hexdigest() != path[5:]:
                return self.send(403, b"<Error>AccessDenied</Error>", None, "application/xml")
            self.content(unquote(file), data, {"ETag": '"%s"' % path[5:]})

        def content(self, file, data, headers):
            if file in state.modes.get("bad-sha", ()):
                data = bytes([data[0] ^ 0xFF]) + data[1:]
            start, status = 0, 200
            rng = self.headers.get("Range")
            if rng and file not in state.modes.get("no-range", ()):
                if not rng.startswith("bytes=") or not rng[6:].split("-")[0].isdigit():
                    return self.send(400, b"bad range")
                start = int(rng[6:].split("-")[0])
                if start >= len(data):
                    return self.send(416, b"", {"Content-Range": "bytes */%d" % len(data)})
                status = 206
                headers = dict(headers, **{"Content-Range": "bytes %d-%d/%d" % (start, len(data) - 1, len(data))})
            body = data[start:]
            headers = dict(headers, **{"Accept-Ranges": "bytes"})
            drop = state.once("drop-once", file)
            die = state.once("die-mid", file)
            if not (drop or die):
                return self.send(status, body, headers, "application/octet-stream")
            # Promise the whole body, send half, then vanish.
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            if die:
                state.log.flush()
                os._exit(0)
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)

    return Handler


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", required=True, help="model folder to serve")
    ap.add_argument("--repo", default="test-org/tinystories")
    ap.add_argument("--state", required=True, help="folder for ports.json and requests.log")
    ap.add_argument("--mode", action="append", default=[])
    ap.add_argument("--cdn-host", default="127.0.0.2")
    ap.add_argument("--lifetime", type=float, default=300)
    args = ap.parse_args()
    args.log = os.path.join(args.state, "requests.log")
    state = State(args)

    class Server(ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request, client_address):
            # A client that aborts a transfer (pull cancelling the other files after a failure)
            # is expected here, not a server bug worth a traceback.
            if not isinstance(sys.exc_info()[1], (ConnectionError, BrokenPipeError)):
                super().handle_error(request, client_address)

    hub = Server(("127.0.0.1", 0), make_handler(state, "hub"))
    try:
        cdn = Server((args.cdn_host, 0), make_handler(state, "cdn"))
    except OSError:  # no 127.0.0.2 on this host: "localhost" is still another host name
        args.cdn_host = "localhost"
        cdn = Server(("127.0.0.1", 0), make_handler(state, "cdn"))
    state.cdn_base = "http://%s:%d" % (args.cdn_host, cdn.server_address[1])
    threading.Thread(target=cdn.serve_forever, daemon=True).start()
    timer = threading.Timer(args.lifetime, lambda: os._exit(0))
    timer.daemon = True
    timer.start()
    info = {"endpoint": "http://127.0.0.1:%d" % hub.server_address[1], "cdn": state.cdn_base,
            "commit": state.repo.commit, "pid": os.getpid()}
    tmp = os.path.join(args.state, "ports.json.tmp")
    with open(tmp, "w") as f:
        json.dump(info, f)
    os.rename(tmp, os.path.join(args.state, "ports.json"))  # appears complete or not at all
    hub.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
