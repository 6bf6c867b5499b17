"""Masking for shared views: secrets, host names, IP addresses, user names and absolute paths.

A shared summary is pasted into team chats and issues; what it says about the failure
(`KeyError: 12`) must stay, the credentials a launch command or a log carries
(`--api-key sk-...`, `HF_TOKEN=hf_...`) and where it happened
(`root@10.1.230.174:/data/eagle3/...`) must not.
"""

import ipaddress
import re
from collections.abc import Iterable

HOST = "[host]"
USER = "[user]"
IP = "[ip]"
PATH = "[path]"
SECRET = "[secret]"

# --- secrets ----------------------------------------------------------------------

_PRIVATE_KEY = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
    r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    re.S,
)
# Credentials whose shape alone says what they are, wherever they appear.
_TOKEN_SHAPES = re.compile(
    r"(?<![\w-])(?:"
    r"hf_[A-Za-z0-9]{20,}"  # Hugging Face
    r"|sk-[\w-]{20,}"  # OpenAI (sk-proj-...), Anthropic (sk-ant-...), OpenRouter, DeepSeek
    r"|(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}"  # AWS access key ids
    r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_\w{22,}"  # GitHub
    r"|gl(?:pat|dt|rt|soat|ptt)-[\w-]{20,}"  # GitLab
    r"|xox[abposr]-[\w-]{10,}"  # Slack
    r"|AIza[\w-]{35}"  # Google
    r"|[rs]k_(?:live|test)_[A-Za-z0-9]{20,}"  # Stripe
    r"|npm_[A-Za-z0-9]{36}|pypi-[\w-]{50,}"  # package registries
    r"|eyJ[\w-]{8,}\.eyJ[\w-]{8,}\.[\w-]*"  # JSON Web Tokens: header.payload.signature
    r")(?![\w-])"
)
# scheme://user:password@host: both names and the password go.
_CREDENTIAL_URL = re.compile(r"\b([A-Za-z][\w+.-]*://)([^\s:/@]+):([^\s/@]*)@([^\s/:?#]+)")
_AUTHORIZATION = re.compile(
    r"\b((?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?)"
    r"(?:(bearer|basic|token|digest|negotiate|apikey)\s+)?([^\s\"',;]+)",
    re.I,
)
_BEARER = re.compile(r"\b(bearer\s+)([\w.~+/-]{8,}=*)", re.I)
# NAME=VALUE, NAME: VALUE, 'NAME': 'VALUE' (JSON, Python reprs, YAML, headers) and
# --flag VALUE / --flag=VALUE, for names that end in a credential's word; which of those
# really name a credential (api_key, not max_tokens) is for is_secret_name to say.
_CREDENTIAL_WORD = r"(?:token|secret|passw(?:or)?d|passphrase|key|credentials?|auth)"
_ASSIGNMENT_SOURCE = (
    r"(?<![\w.-])(?P<flag>--?)?(?P<quote>[\"']?)"
    rf"(?P<name>(?:[a-z_][\w.-]*?)?{_CREDENTIAL_WORD})"
    r"(?P=quote)(?![\w.-])"
    r"(?P<sep>\s*[:=]\s*|(?P<space>[ \t]+))"
    r"(?:\[\s*)?(?P<vquote>[\"'])?"
    # After a space, a value is one word that is not the next flag or assignment.
    r"(?P<value>(?(vquote)[^\"'\n]*|(?(space)(?!-)[^\s\"',;&)}\]=:]++(?![=:])"
    r"|[^\s\"',;&)}\]]+)))"
)
# Matched against the lowered text: case-insensitive matching is several times slower.
_ASSIGNMENT = re.compile(_ASSIGNMENT_SOURCE)
_ASSIGNMENT_ANY_CASE = re.compile(_ASSIGNMENT_SOURCE, re.I)  # where lowering moves offsets
# A credential's word right before a separator: the cheap test before _ASSIGNMENT's scan.
_ASSIGNMENT_HINT = re.compile(rf"{_CREDENTIAL_WORD}[\"']?(?:\s*[:=]|[ \t])")
_TOKEN_PREFIXES = ("hf_", "sk-", "AKIA", "ASIA", "ABIA", "ACCA", "A3T", "ghp_", "gho_", "ghu_",
                   "ghs_", "ghr_", "github_pat_", "glpat-", "gldt-", "glrt-", "glsoat-", "glptt-",
                   "xox", "AIza", "k_live_", "k_test_", "npm_", "pypi-", "eyJ")  # fmt: skip
_SECRET_WORDS = (
    "token", "secret", "password", "passwd", "passphrase", "apikey", "accesskey", "secretkey",
    "privatekey", "credential", "credentials",
)  # fmt: skip
_KEY_KINDS = {"api", "access", "secret", "private", "auth", "license", "signing", "encryption",
              "client", "account", "master", "session", "subscription"}  # fmt: skip
# A tokenizer's special tokens (bos_token='<s>') and counts (max_new_token: 8) are no secret.
_NOT_CREDENTIALS = {"bos", "eos", "pad", "unk", "sep", "cls", "mask", "max", "min", "num", "new",
                    "cached", "count", "usage", "budget", "per"}  # fmt: skip
_NOT_A_VALUE = re.compile(
    r"(?:none|null|nil|true|false|\**|[+-]?\d+(?:\.\d+)?|\$\{?\w+\}?|\[\w+\])", re.I
)
_LOOKS_RANDOM = re.compile(r"^(?=.*\d)(?=.*[A-Za-z]).{16,}$")


def is_secret_name(name: str) -> bool:
    """Whether a name says its value is a credential: api_key, HF_TOKEN, not max_tokens."""
    parts = [p for p in re.split(r"[_.-]+", name.lower()) if p]
    if not parts or _NOT_CREDENTIALS.intersection(parts):
        return False
    last = parts[-1]
    if last == "auth" or last.endswith(_SECRET_WORDS):
        return True
    return last == "key" and len(parts) > 1 and parts[-2] in _KEY_KINDS


def _is_secret_assignment(match: re.Match[str], text: str) -> bool:
    value = text[match.start("value") : match.end("value")]
    if not is_secret_name(match["name"]) or _NOT_A_VALUE.fullmatch(value):
        return False
    # After a space and no flag, only a value that looks random: "the token was refused"
    # is prose, `aws_secret_access_key KEY` is not.
    return not match["space"] or bool(match["flag"]) or bool(_LOOKS_RANDOM.search(value))


def _mask_assignments(text: str) -> str:
    lowered = text.lower()
    if not _ASSIGNMENT_HINT.search(lowered):
        return text
    # Lowering keeps offsets unless a character lowers to two (İ): then match any case.
    pattern, subject = (
        (_ASSIGNMENT, lowered) if len(lowered) == len(text) else (_ASSIGNMENT_ANY_CASE, text)
    )
    pieces, kept_to = [], 0
    for match in pattern.finditer(subject):
        if _is_secret_assignment(match, text):
            pieces += [text[kept_to : match.start("value")], SECRET]
            kept_to = match.end("value")
    return "".join([*pieces, text[kept_to:]])


def _authorization(match: re.Match[str]) -> str:
    scheme = f"{match[2]} " if match[2] else ""
    return f"{match[1]}{scheme}{SECRET}"


def mask_secrets(text: str) -> str:
    """Credentials out of a text, whatever else it says: kept even when names are shown."""
    # Literal checks first: most texts have none of these, and `in` costs far less than a scan.
    if "PRIVATE KEY" in text:
        text = _PRIVATE_KEY.sub(SECRET, text)
    if "@" in text:
        text = _CREDENTIAL_URL.sub(rf"\1\2:{SECRET}@\4", text)
    if "uthorization" in text or "UTHORIZATION" in text:
        text = _AUTHORIZATION.sub(_authorization, text)
    if "earer" in text or "EARER" in text:
        text = _BEARER.sub(rf"\1{SECRET}", text)
    text = _mask_assignments(text)
    if any(prefix in text for prefix in _TOKEN_PREFIXES):
        text = _TOKEN_SHAPES.sub(SECRET, text)
    return text


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
_NAMES_HINT = re.compile(r"@|/home/|/Users/")  # texts that can name a user or a host


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


class Redactor:
    """One masking for every output of a share: page, `.md`, `.json` and its live stream."""

    def __init__(self, hosts: Iterable[str] = (), users: Iterable[str] = ()) -> None:
        named_hosts: set[str] = set()
        for host in hosts:
            if host and not _is_ip(host):
                named_hosts.add(host.lower())
                # gpu-01.lab.example.com masked, a bare gpu-01 elsewhere is masked too.
                short = host.split(".", 1)[0].lower()
                if "." in host and len(short) >= MIN_NAME:
                    named_hosts.add(short)
        self.hosts = sorted(named_hosts, key=len, reverse=True)
        self.users = sorted(
            {u for u in users if len(u) >= MIN_NAME and u not in _GENERIC_USERS},
            key=len,
            reverse=True,
        )
        # Host names are case-insensitive, user names are not.
        alternatives = [re.escape(u) for u in self.users]
        if self.hosts:
            alternatives.insert(0, f"(?P<host>(?i:{'|'.join(map(re.escape, self.hosts))}))")
        names = "|".join(alternatives)
        self._named = re.compile(rf"(?<![\w-])(?:{names})(?![\w-])") if names else None
        self._memo: dict[str, str] = {}
        self._cleaned: dict[str, str] = {}  # mask_secrets() of texts learned from

    @classmethod
    def learning(
        cls, texts: Iterable[str], hosts: Iterable[str] = (), users: Iterable[str] = ()
    ) -> "Redactor":
        """A redactor that also knows the hosts and users these texts name (`alice@gpu-01`,
        `ssh://...`, `/home/alice`), so their bare mentions elsewhere are masked too."""
        found_hosts, found_users = set(hosts), set(users)
        # Read with the credentials out: `https://ghp_...@github.com` names no user.
        cleaned = {t: mask_secrets(t) for t in set(texts) if _NAMES_HINT.search(t)}
        for text in cleaned.values():
            for match in _SCHEME.finditer(text) if "://" in text else ():
                if match[1] == "ssh":
                    found_users.add((match[2] or "").split(":", 1)[0])
                    found_hosts.add(match[3] or "")
            for match in _CREDENTIAL_URL.finditer(text) if "@" in text else ():
                found_users.add(match[2])
                found_hosts.add(match[4])
            for match in _USER_AT_HOST.finditer(text) if "@" in text else ():
                if match[1] != "git":
                    found_users.add(match[1])
                    found_hosts.add(match[2].rstrip("."))
            found_users.update(_HOME.findall(text))
        redactor = cls(hosts=found_hosts, users=found_users)
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
            text = _CREDENTIAL_URL.sub(rf"\1{USER}:{SECRET}@{HOST}", text)
        if "://" in text:
            text = _SCHEME.sub(self._source, text)
        if "@" in text:
            text = _USER_AT_HOST.sub(f"{USER}@{HOST}", text)
        if "::" in text or text.count(":") >= 7:
            text = _IPV6.sub(_ipv6, text)
        if "." in text:
            text = _IPV4.sub(IP, text)
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
