"""Masking for shared views: host names, IP addresses, user names and paths, on top of the
credentials (app/credentials.py) that every output hides.

A shared summary is pasted into team chats and issues; what it says about the failure
(`KeyError: 12`) must stay, the credentials a launch command or a log carries
(`--api-key sk-...`, `HF_TOKEN=hf_...`) and where it happened
(`root@10.1.230.174:/data/eagle3/...`) must not.
"""

import ipaddress
import re
from collections.abc import Iterable

from app.credentials import CREDENTIAL_URL, SECRET, mask_secrets

HOST = "[host]"
USER = "[user]"
IP = "[ip]"
PATH = "[path]"

# --- names and addresses ------------------------------------------------------------

_SCHEME = re.compile(r"\b(ssh|file)://(?:([^@/\s]+)@)?([^/:\s]+)?(?::(\d+))?(/\S*)?")
_USER_AT_HOST = re.compile(r"\b([A-Za-z_][\w.-]*)@([A-Za-z0-9][\w.-]*)")
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w.])")
# Full and compressed (fe80::1, ::1) forms; ipaddress decides (12:34:56 is a time).
_IPV6 = re.compile(
    r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:(?:\d{1,3}\.){3}\d{1,3}|[0-9A-Fa-f]{0,4})"
    r"(?:%[\w.]+)?(?![\w:])"
)
# An absolute path of two or more parts; the last part (a file name) is kept.
_ABS_PATH = re.compile(r"(?<![\w.~/])(/(?:[\w.@+-]+/)+)([\w.@+-]*)")
_HOME = re.compile(r"(?<![\w.])(?:/home|/Users|/export/home)/([A-Za-z_][\w.-]*)")
# Accounts every machine has: masked where they log in (root@...), not as words elsewhere
# ("root cause"); `git@` is a code forge's, not a person's.
_GENERIC_USERS = {"root", "admin", "administrator", "user", "ubuntu", "debian", "centos",
                  "ec2-user", "nobody", "guest", "runner", "git"}  # fmt: skip
MIN_NAME = 3  # shorter names would mask ordinary words
# A home folder that a path names without its user's name (`~/models`, `C:\\Users\\x\\...`).
_TILDE_PATH = re.compile(r"(?<![\w.~/])~([A-Za-z_][\w.-]*)?/(?:[\w.@+-]+/)*([\w.@+-]*)")
_WINDOWS_PATH = re.compile(r"(?<![\w\\])[A-Za-z]:\\(?:[^\\\s\"'<>|*?:]+\\)+([^\\\s\"'<>|*?:]*)")
_WINDOWS_HOME = re.compile(
    r"(?<![\w\\])[A-Za-z]:\\(?:Users|Documents and Settings)\\([^\\\s\"'<>|*?:]+)", re.I
)
# Host names by shape where no log source names them: a dotted name under a suffix that names
# machines or organisations (gpu-box-22.corp.example.com, ip-10-1-2-3.ec2.internal); a
# module path (sglang.srt.server) or a file (run.sh) ends in none of these.
_HOST_SUFFIXES = (
    r"(?:com|net|org|io|ai|dev|edu|gov|internal|local|lan|corp|intra|intranet|localdomain"
    r"|example|cloud)"
)
_FQDN = re.compile(
    rf"(?<![\w.@/\\-])(?:[A-Za-z0-9](?:[\w-]*[A-Za-z0-9])?\.)+{_HOST_SUFFIXES}(?![\w-]|\.\w)",
    re.I,
)
_LETTER = re.compile(r"[A-Za-z]")
_FQDN_HINT = re.compile(rf"\.{_HOST_SUFFIXES}\b", re.I)
_EC2_NAME = re.compile(r"(?<![\w-])ip(?:-\d{1,3}){4}(?![\w-])")  # ip-10-1-2-3
# Any URL's host (http://inference-7:30000), and the value of an option or variable whose name
# says host or address (--hostname node-a7, MASTER_ADDR=node-a7, "host": "gpu-3").
_URL_HOST = re.compile(r"\b([A-Za-z][\w+.-]*://(?:[^\s/@]*@)?)([A-Za-z0-9_](?:[\w.-]*[\w])?)")
_HOST_OPTION = re.compile(
    r"(?<![\w.-])(?P<name>--[\w-]*?(?:host(?:name)?|addr(?:ess)?|node-?name)(?:[ \t]+|=)"
    r"|[\"']?[\w.-]*?(?:host(?:name)?|addr(?:ess)?|node_?name)[\"']?[ \t]*[:=][ \t]*)"
    r"[\"']?(?P<value>[A-Za-z][\w.-]*[\w])",
    re.I,
)
_HOST_WORDS = ("host", "addr", "node")
_HOST_LIKE = re.compile(r"[\d.-]")  # a word with none of these is a word: `host: the`
_MACHINE_LABEL = re.compile(r"[\d-]")  # gpu-box-22, node7: no word
# Where the software came from, not where the campaign ran: shown as they are.
_PUBLIC_HOSTS = ("localhost", "huggingface.co", "hf.co", "github.com", "githubusercontent.com",
                 "pypi.org", "pythonhosted.org", "python.org", "pytorch.org", "nvidia.com",
                 "docker.io", "docker.com", "nvcr.io", "ghcr.io", "quay.io", "readthedocs.io",
                 "anaconda.org", "modelscope.cn", "vllm.ai", "sglang.ai")  # fmt: skip
_NAMES_HINT = re.compile(  # texts that can name a user or a host
    rf"@|/home/|/Users/|://|~|:\\|host|addr|node|ip-\d|\.{_HOST_SUFFIXES}\b", re.I
)


def _is_public(host: str) -> bool:
    lowered = host.lower().rstrip(".")
    return any(lowered == p or lowered.endswith("." + p) for p in _PUBLIC_HOSTS)


def _is_private_host(name: str) -> bool:
    """A name that says where the campaign ran: not an address, not a public site."""
    return bool(name) and not _is_ip(name) and not _is_public(name) and name != HOST


def _is_fqdn(name: str) -> bool:
    # 2.6.0.dev is a version: a host name has a letter before its suffix.
    return bool(_LETTER.search(name.rsplit(".", 1)[0])) and not _is_public(name)


def _fqdns(text: str) -> list[str]:
    if not _FQDN_HINT.search(text):
        return []
    return [m[0] for m in _FQDN.finditer(text) if _is_fqdn(m[0])]


def _option_hosts(text: str) -> list[str]:
    lowered = text.lower()
    if not any(word in lowered for word in _HOST_WORDS):
        return []
    return [
        m["value"] for m in _HOST_OPTION.finditer(text)
        if _HOST_LIKE.search(m["value"]) and _is_private_host(m["value"])
    ]  # fmt: skip


def _url_hosts(text: str) -> list[str]:
    if "://" not in text:
        return []
    return [m[2] for m in _URL_HOST.finditer(text) if _is_private_host(m[2])]


def _hosts_in(text: str) -> list[str]:
    """Host names a text gives by their shape or their place, masked wherever they appear."""
    return [*_url_hosts(text), *_option_hosts(text), *_fqdns(text)]


def _ipv6(match: re.Match[str]) -> str:
    candidate = match[0]
    try:
        ipaddress.IPv6Address(candidate.split("%", 1)[0])
    except ValueError:
        return candidate
    return IP if any(c not in ":" for c in candidate) else candidate


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return False
    return True


def _url_host(match: re.Match[str]) -> str:
    return f"{match[1]}{HOST}" if _is_private_host(match[2]) else match[0]


def _option_host(match: re.Match[str]) -> str:
    value = match["value"]
    if not (_HOST_LIKE.search(value) and _is_private_host(value)):
        return match[0]
    return match[0][: match.start("value") - match.start()] + HOST


class Redactor:
    """One masking for every output of a share: page, `.md`, `.json` and its live stream."""

    def __init__(
        self, hosts: Iterable[str] = (), users: Iterable[str] = (), by_shape: Iterable[str] = ()
    ) -> None:
        named_hosts: set[str] = set()
        shaped = set(by_shape)
        for host in [*hosts, *shaped]:
            if host and not _is_ip(host):
                named_hosts.add(host.lower())
                # gpu-01.lab.example.com masked, a bare gpu-01 elsewhere is masked too; of a
                # name only its shape gave, a first label that is a word (cache.internal)
                # stays a word.
                short = host.split(".", 1)[0].lower()
                if (
                    "." in host
                    and len(short) >= MIN_NAME
                    and (host not in shaped or _MACHINE_LABEL.search(short))
                ):
                    named_hosts.add(short)
        self.hosts = sorted(named_hosts, key=len, reverse=True)
        self.users = sorted(
            {u for u in users if len(u) >= MIN_NAME and u not in _GENERIC_USERS},
            key=len,
            reverse=True,
        )
        # Host names are case-insensitive, user names are not. A user name is masked inside
        # a hyphenated or dotted word too (a container `sglang-alice-7f9c`), not inside a
        # snake_case one (user `bench`, `bench_serving`).
        alternatives = []
        if self.hosts:
            hosts = "|".join(map(re.escape, self.hosts))
            # Not the first label of another dotted name: pypi of pypi.corp... in pypi.org.
            alternatives.append(rf"(?<![\w-])(?P<host>(?i:{hosts}))(?![\w-]|\.\w)")
        if self.users:
            users = "|".join(map(re.escape, self.users))
            alternatives.append(rf"(?<![A-Za-z0-9_])(?:{users})(?![A-Za-z0-9_])")
        self._named = re.compile("|".join(alternatives)) if alternatives else None
        self._memo: dict[str, str] = {}
        self._cleaned: dict[str, str] = {}  # mask_secrets() of texts learned from

    @classmethod
    def learning(
        cls, texts: Iterable[str], hosts: Iterable[str] = (), users: Iterable[str] = ()
    ) -> "Redactor":
        """A redactor that also knows the hosts and users these texts name (`alice@gpu-01`,
        `ssh://...`, `/home/alice`, `--hostname node-a7`, `gpu-3.corp.example.com`), so
        their bare mentions elsewhere are masked too."""
        found_hosts, found_users, shaped = set(hosts), set(users), set[str]()
        # Read with the credentials out: `https://ghp_...@github.com` names no user.
        cleaned = {t: mask_secrets(t) for t in set(texts) if _NAMES_HINT.search(t)}
        for text in cleaned.values():
            for match in _SCHEME.finditer(text) if "://" in text else ():
                if match[1] == "ssh":
                    found_users.add((match[2] or "").split(":", 1)[0])
                    found_hosts.add(match[3] or "")
            for match in CREDENTIAL_URL.finditer(text) if "@" in text else ():
                found_users.add(match[2])
                found_hosts.add(match[4])
            for match in _USER_AT_HOST.finditer(text) if "@" in text else ():
                if match[1] != "git":
                    found_users.add(match[1])
                    found_hosts.add(match[2].rstrip("."))
            found_users.update(_HOME.findall(text))
            if "~" in text:
                found_users.update(m[1] for m in _TILDE_PATH.finditer(text) if m[1])
            if ":\\" in text:
                found_users.update(_WINDOWS_HOME.findall(text))
            shaped.update(_hosts_in(text))
        redactor = cls(hosts=found_hosts, users=found_users, by_shape=shaped - found_hosts)
        redactor._cleaned = cleaned
        return redactor

    def __call__(self, text: str | None) -> str:
        if not text:
            return text or ""
        masked = self._memo.get(text)
        if masked is None:
            masked = self._memo[text] = self._mask(text)
        return masked

    def _mask(self, text: str) -> str:
        cleaned = self._cleaned.get(text)
        text = mask_secrets(text) if cleaned is None else cleaned
        # Each pass only where its literal is: most texts need few of them.
        if "@" in text:
            text = CREDENTIAL_URL.sub(rf"\1{USER}:{SECRET}@{HOST}", text)
        if "://" in text:
            text = _SCHEME.sub(self._source, text)
        if "@" in text:
            text = _USER_AT_HOST.sub(f"{USER}@{HOST}", text)
        if "://" in text:
            text = _URL_HOST.sub(_url_host, text)
        if any(word in text.lower() for word in _HOST_WORDS):
            text = _HOST_OPTION.sub(_option_host, text)
        if _FQDN_HINT.search(text):
            text = _FQDN.sub(lambda m: HOST if _is_fqdn(m[0]) else m[0], text)
        if "ip-" in text:
            text = _EC2_NAME.sub(HOST, text)
        if "::" in text or text.count(":") >= 7:
            text = _IPV6.sub(_ipv6, text)
        if "." in text:
            text = _IPV4.sub(IP, text)
        if ":\\" in text:
            text = _WINDOWS_PATH.sub(lambda m: f"{PATH}\\{m[1]}", text)
        if "~" in text:
            text = _TILDE_PATH.sub(lambda m: f"{PATH}/{m[2]}", text)
        if "/" in text:
            text = _ABS_PATH.sub(lambda m: f"{PATH}/{m.group(2)}", text)
        if self._named is not None:
            text = self._named.sub(lambda m: HOST if m.lastgroup == "host" else USER, text)
        return text

    @staticmethod
    def _source(match: re.Match[str]) -> str:
        scheme, path = match.group(1), match.group(5) or ""
        name = path.rsplit("/", 1)[-1]
        if scheme == "file":
            return f"file://{PATH}/{name}"
        user = f"{USER}@" if match.group(2) else ""
        return f"ssh://{user}{HOST}/{PATH}/{name}" if path else f"ssh://{user}{HOST}"


def secrets_only(text: str | None) -> str:
    """For a link shared unmasked: names and paths stay, credentials still go."""
    return mask_secrets(text) if text else ""
