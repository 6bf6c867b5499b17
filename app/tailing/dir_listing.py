"""The regular files of one folder whose names match a pattern: what a watched log folder
(app/watching.py) looks at each pass.

Standard library only and Python 3.6 compatible, like the follower: called in-process for
file:// watches and sent verbatim to the host for ssh:// ones, where `python3 - DIR PATTERN`
runs `main()` and prints one JSON object. Arguments, never a shell, carry the folder.

Answer: {"files": [{"name", "size", "mtime"}], "truncated": bool}, or {"error": KIND,
"message": ...} with KIND one of not_found, permission, not_a_folder, error.
"""

import errno
import fnmatch
import json
import os
import stat
import sys
from typing import Any, Dict, List

# More matches than this in one folder are not a campaign's logs: the newest are kept.
MAX_FILES = 2000
MAX_NAME_BYTES = 255

Answer = Dict[str, Any]


def list_folder(folder: str, pattern: str) -> Answer:
    try:
        entries = os.scandir(folder)
    except OSError as error:
        if error.errno == errno.ENOENT:
            return {"error": "not_found", "message": "{} does not exist".format(folder)}
        if error.errno in (errno.EACCES, errno.EPERM):
            return {"error": "permission", "message": "{} cannot be read".format(folder)}
        if error.errno == errno.ENOTDIR:
            return {"error": "not_a_folder", "message": "{} is not a folder".format(folder)}
        return {"error": "error", "message": "{}: {}".format(folder, error.strerror)}
    found: List[Answer] = []
    with entries:
        for entry in entries:
            name = entry.name
            if len(name.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
                continue
            if not fnmatch.fnmatchcase(name, pattern):
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue  # gone between the listing and its look
            if not stat.S_ISREG(st.st_mode):
                continue
            try:
                name.encode("utf-8")
            except UnicodeEncodeError:
                continue  # not a name a URL can carry
            found.append({"name": name, "size": st.st_size, "mtime": st.st_mtime})
    found.sort(key=lambda f: (f["mtime"], f["name"]))
    truncated = len(found) > MAX_FILES
    return {"files": found[-MAX_FILES:], "truncated": truncated}


def main() -> None:
    folder, pattern = sys.argv[1], sys.argv[2]
    sys.stdout.write(json.dumps(list_folder(folder, pattern)) + "\n")


if __name__ == "__main__":
    main()
