"""Domain errors raised by actions; the web layer turns each into its HTTP status."""


class NotFound(Exception):
    """404: no such campaign, attempt, note or share link."""


class Conflict(Exception):
    """409: the request is well formed but makes no sense in the current state."""


class Invalid(Exception):
    """422: the request refers to something it may not (another campaign's attempt...)."""


class StorageFull(Exception):
    """507: the database's disk (or PostgreSQL's) is full; nothing of the request was stored."""


STORAGE_FULL = (
    "the dashboard's database disk is full: nothing was stored. "
    "Free space on it and try again; logs being followed are kept and stored once space returns."
)
