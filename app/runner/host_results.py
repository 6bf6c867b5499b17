"""A benchmark's result file on the GPU host: its identity noted before the job, then what
the job wrote to it (of an appended file, only its own part). Part of the runner's host
program (app/runner/hostprog.py): standard library only, Python 3.6 compatible."""

import os
import stat
from typing import Dict, List, Optional

if __name__ != "__main__":
    # Run on a host, this file's code comes after host_proc.py's.
    from app.runner.host_proc import Answer, _read_json

# A benchmark's result file is read whole (vLLM's with --save-detailed holds every request):
# past this it is not sent, and the printed result stands.
RESULT_FILE_BYTES = 16 << 20


def _identity(path: str) -> Optional[List[int]]:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]


def _listing(folder: str, suffix: str, skip: List[str]) -> Dict[str, List[int]]:
    found = {}
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                name = entry.name
                if not name.endswith(suffix) or any(name.endswith(s) for s in skip):
                    continue
                try:
                    if entry.is_file():
                        st = entry.stat()
                        found[name] = [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]
                except OSError:
                    continue
    except OSError:
        pass  # not there yet: vLLM creates --result-dir itself
    return found


def _watch(cwd: str, watch: Answer) -> Answer:
    """The result file's identity before the job: one path, or the files of a folder that
    a benchmark names for itself (vLLM without --result-filename)."""
    append = bool(watch.get("append"))
    if watch.get("path"):
        path = os.path.normpath(os.path.join(cwd, os.path.expanduser(watch["path"])))
        return {"path": path, "append": append, "before": _identity(path)}
    folder = os.path.normpath(os.path.join(cwd, os.path.expanduser(watch.get("dir") or ".")))
    suffix, skip = watch.get("suffix") or "", list(watch.get("skip_suffixes") or [])
    return {"dir": folder, "suffix": suffix, "skip_suffixes": skip, "append": append,
            "before": _listing(folder, suffix, skip)}  # fmt: skip


def _part_of(before: Optional[List[int]], now: List[int], append: bool) -> Optional[int]:
    """Where this job's record starts in the file, or None when the job did not touch it.
    An appended file that is the same file, not shorter, starts where it ended before."""
    if before == now:
        return None
    if before is None or not append or before[:2] != now[:2] or now[2] < before[2]:
        return 0  # new, rewritten, replaced or truncated: all of it is this job's
    return before[2]


def _changed_file(watched: Answer) -> Answer:
    """The file the job wrote, with its identity before and now, or the problem."""
    if watched.get("path"):
        path = watched["path"]
        now = _identity(path)
        if now is None:
            return {"path": path, "problem": "no file at %s" % path}
        return {"path": path, "before": watched.get("before"), "now": now}
    folder, before = watched["dir"], watched.get("before") or {}
    files = _listing(folder, watched.get("suffix", ""), watched.get("skip_suffixes", []))
    changed = [name for name, now in files.items() if now != before.get(name)]
    if not changed:
        kind = watched.get("suffix") or "new"
        return {
            "path": None,
            "problem": "no %s file in %s was written by this run" % (kind, folder),
        }
    newest = max(changed, key=lambda name: files[name][3])
    return {
        "path": os.path.join(folder, newest),
        "before": before.get(newest),
        "now": files[newest],
    }


def _read_from(path: str, offset: int) -> Answer:
    try:
        # O_NONBLOCK: a FIFO where the file should be must not hold the program.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as error:
        return {"path": path, "problem": "cannot read %s: %s" % (path, error.strerror)}
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return {"path": path, "problem": "%s is not a regular file" % path}
        size = st.st_size - offset
        if size > RESULT_FILE_BYTES:
            return {
                "path": path,
                "problem": "%s: %d bytes from this run, more than the %d MiB the runner reads"
                % (path, size, RESULT_FILE_BYTES >> 20),
            }
        os.lseek(fd, offset, os.SEEK_SET)
        chunks, left = [], size
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as error:
        return {"path": path, "problem": "cannot read %s: %s" % (path, error.strerror)}
    finally:
        os.close(fd)
    return {"path": path, "offset": offset, "text": b"".join(chunks).decode("utf-8", "replace")}


def result_file(run_dir: str, name: str) -> Answer:
    """What job `name` wrote to its result file: `text` (of an appended file, only what it
    added) or the `problem` that keeps it from being read. Read-only, size-capped."""
    watched = _read_json(os.path.join(run_dir, name + ".watch.json"))
    if watched is None:
        return {"path": None, "problem": "the result file was not looked at before the run"}
    found = _changed_file(watched)
    if "problem" in found:
        return found
    offset = _part_of(found["before"], found["now"], bool(watched.get("append")))
    if offset is None:
        return {"path": found["path"], "problem": "%s was not written by this run" % found["path"]}
    return _read_from(found["path"], offset)
