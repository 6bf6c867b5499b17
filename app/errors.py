"""Domain errors raised by actions; the web layer turns each into its HTTP status."""


class NotFound(Exception):
    """404: no such campaign, attempt, note or share link."""


class Conflict(Exception):
    """409: the request is well formed but makes no sense in the current state."""


class Invalid(Exception):
    """422: the request refers to something it may not (another campaign's attempt...)."""
