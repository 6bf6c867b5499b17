"""Credentials out of any text, by their shape (`hf_...`, `sk-...`), by the name they are
given (`--api-key`, `PGPASSWORD=`, `"private_key_id":`) and by their place (`curl -u user:`,
`mysql -p`, `wandb login`): kept out of every output, masked links and unmasked ones alike.
"""

import re

SECRET = "[secret]"

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
    r"|nvapi-[\w-]{20,}"  # NVIDIA's API catalog and NGC
    r")(?![\w-])"
)
# scheme://user:password@host: both names and the password go; redis://:password@host has
# no user name.
CREDENTIAL_URL = re.compile(r"\b([A-Za-z][\w+.-]*://)([^\s:/@]*):([^\s/@]*)@([^\s/:?#]+)")
_AUTHORIZATION = re.compile(
    r"\b((?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?)"
    r"(?:(bearer|basic|token|digest|negotiate|apikey)\s+)?([^\s\"',;]+)",
    re.I,
)
_BEARER = re.compile(r"\b(bearer\s+)([\w.~+/-]{8,}=*)", re.I)
# NAME=VALUE, NAME: VALUE, 'NAME': 'VALUE' (JSON, Python reprs, YAML, headers) and
# --flag VALUE / --flag=VALUE, for names that end in a credential's word; which of those
# really name a credential (api_key, not max_tokens) is for is_secret_name to say.
_CREDENTIAL_WORD = (
    r"(?:token|secret|passw(?:or)?d|passphrase|pass|pwd|key(?:[_.-]id)?|credentials?|auth)"
)
_ASSIGNMENT_SOURCE = (
    r"(?<![\w.-])(?P<flag>--?)?(?P<quote>[\"']?)"
    rf"(?P<name>(?:[a-z_][\w.-]*?)?{_CREDENTIAL_WORD})"
    r"(?P=quote)(?![\w.-])"
    r"(?P<sep>\s*[:=]\s*|(?P<space>[ \t]+))"
    r"(?:\[\s*)?(?P<vquote>[\"'])?"
    # After a flag and a space, the next word whatever it holds (`--api-key abc==`,
    # `--api-key id:secret`); after a name and a space, one word that is not the next flag
    # or assignment.
    r"(?P<value>(?(vquote)[^\"'\n]*|(?(space)(?(flag)(?!-)[^\s\"',;&)}\]]+"
    r"|(?!-)[^\s\"',;&)}\]=:]++(?![=:]))"
    r"|[^\s\"',;&)}\]]+)))"
)
# Matched against the lowered text: case-insensitive matching is several times slower.
_ASSIGNMENT = re.compile(_ASSIGNMENT_SOURCE)
_ASSIGNMENT_ANY_CASE = re.compile(_ASSIGNMENT_SOURCE, re.I)  # where lowering moves offsets
# A credential's word right before a separator: the cheap test before _ASSIGNMENT's scan.
_ASSIGNMENT_HINT = re.compile(rf"{_CREDENTIAL_WORD}[\"']?(?:\s*[:=]|[ \t])")
_TOKEN_PREFIXES = ("hf_", "sk-", "AKIA", "ASIA", "ABIA", "ACCA", "A3T", "ghp_", "gho_", "ghu_",
                   "ghs_", "ghr_", "github_pat_", "glpat-", "gldt-", "glrt-", "glsoat-", "glptt-",
                   "xox", "AIza", "k_live_", "k_test_", "npm_", "pypi-", "eyJ",
                   "nvapi-")  # fmt: skip
# A name's last part that says its value is a credential (PGPASSWORD, db_pass, MYSQL_PWD).
_SECRET_WORDS = (
    "token", "secret", "password", "passwd", "passphrase", "apikey", "accesskey", "secretkey",
    "privatekey", "credential", "credentials",
)  # fmt: skip
_SECRET_PARTS = {"auth", "pass", "pwd"}
# `*_KEY` is a credential (OPENAI_KEY, AZURE_OPENAI_KEY), unless what comes before says it
# keys a table, a cache or a sort.
_NOT_KEY_KINDS = {"sort", "cache", "primary", "foreign", "partition", "hash", "routing",
                  "lookup", "dict", "group", "shard", "sharding", "kv", "prefix", "index",
                  "bucket", "metric", "field", "column", "row", "map", "attr",
                  "ssh", "host", "ssl", "tls", "public", "pub"}  # fmt: skip
# A tokenizer's special tokens (bos_token='<s>') and counts (max_new_token: 8) are no secret.
_NOT_CREDENTIALS = {"bos", "eos", "pad", "unk", "sep", "cls", "mask", "max", "min", "num", "new",
                    "cached", "count", "usage", "budget", "per"}  # fmt: skip
# Placeholders, not values; a number too where a token is counted (`#token: 100`), but a
# numeric password is a password (PGPASSWORD=20240101).
_PLACEHOLDER = re.compile(r"(?:none|null|nil|true|false|\**|\$\{?\w+\}?|\[\w+\])", re.I)
_NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?")
_LOOKS_RANDOM = re.compile(r"^(?=.*\d)(?=.*[A-Za-z]).{16,}$")


def _name_parts(name: str) -> list[str]:
    return [p for p in re.split(r"[_.-]+", name.lower()) if p]


def is_secret_name(name: str) -> bool:
    """Whether a name says its value is a credential: api_key, HF_TOKEN, OPENAI_KEY,
    PGPASSWORD, private_key_id, not max_tokens nor cache_key."""
    parts = _name_parts(name)
    if parts[-1:] == ["id"] and len(parts) > 1 and parts[-2] == "key":
        parts = parts[:-1]  # private_key_id, AWS_ACCESS_KEY_ID: the key's own name
    if not parts or _NOT_CREDENTIALS.intersection(parts):
        return False
    last = parts[-1]
    if last in _SECRET_PARTS or last.endswith(_SECRET_WORDS):
        return True
    return last == "key" and len(parts) > 1 and parts[-2] not in _NOT_KEY_KINDS


def _counts_tokens(name: str) -> bool:
    return _name_parts(name)[-1:] in (["token"], ["tokens"])


def _is_secret_assignment(match: re.Match[str], text: str) -> bool:
    value = text[match.start("value") : match.end("value")]
    name = match["name"]
    if not is_secret_name(name) or _PLACEHOLDER.fullmatch(value):
        return False
    if text[match.start("value") - 1 : match.end("value") + 1] == SECRET:
        return False  # masked already: masking again is the same text
    if _NUMBER.fullmatch(value) and _counts_tokens(name):
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


# By position, where no name says so: the password after `-u user:` (curl, wget), after
# `-p` glued on (mysql and its kin; `-p PASS` is sshpass's and `docker login`'s), and the
# key after `login` (`wandb login KEY`).
_USER_PASSWORD = re.compile(r"(?<![\w-])(-u\s*|--user[= ]\s*)(['\"]?)([^\s:'\"]+):([^\s'\"]+)")
_GLUED_P = re.compile(
    r"(?<![\w-])((?:mysql\w*|mariadb[\w-]*|sshpass)\b[^\n;|&]*?\s-p)(['\"]?)([^\s'\"]+)"
)
_SPACED_P = re.compile(
    r"(?<![\w-])((?:sshpass|(?:docker|podman|nerdctl|buildah|helm\s+registry)\s+login)"
    r"\b[^\n;|&]*?\s-p\s+)(['\"]?)([^\s'\"]+)"
)
_LOGIN_KEY = re.compile(
    r"(?<![\w-])((?:wandb|huggingface-cli|hf(?:\s+auth)?|comet|clearml-init|modal\s+token)"
    r"\s+login(?:\s+--?[\w-]+)*\s+)(['\"]?)(?!-)([^\s'\"]+)"
)


def _user_password(match: re.Match[str]) -> str:
    user, password = match[3], match[4]
    if user.isdigit() and password.isdigit():
        return match[0]  # --user 1000:1000 is a uid and a gid
    return f"{match[1]}{match[2]}{user}:{SECRET}"


def _mask_positions(text: str) -> str:
    if "-u" in text:
        text = _USER_PASSWORD.sub(_user_password, text)
    if "-p" in text:
        text = _GLUED_P.sub(rf"\1\2{SECRET}", text)
        text = _SPACED_P.sub(rf"\1\2{SECRET}", text)
    if "login" in text:
        text = _LOGIN_KEY.sub(rf"\1\2{SECRET}", text)
    return text


def _authorization(match: re.Match[str]) -> str:
    scheme = f"{match[2]} " if match[2] else ""
    return f"{match[1]}{scheme}{SECRET}"


def mask_secrets(text: str) -> str:
    """Credentials out of a text, whatever else it says: kept even when names are shown."""
    # Literal checks first: most texts have none of these, and `in` costs far less than a scan.
    if "PRIVATE KEY" in text:
        text = _PRIVATE_KEY.sub(SECRET, text)
    if "@" in text:
        text = CREDENTIAL_URL.sub(rf"\1\2:{SECRET}@\4", text)
    if "uthorization" in text or "UTHORIZATION" in text:
        text = _AUTHORIZATION.sub(_authorization, text)
    if "earer" in text or "EARER" in text:
        text = _BEARER.sub(rf"\1{SECRET}", text)
    text = _mask_assignments(text)
    text = _mask_positions(text)
    if any(prefix in text for prefix in _TOKEN_PREFIXES):
        text = _TOKEN_SHAPES.sub(SECRET, text)
    return text
