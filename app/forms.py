"""HTML forms: parsed with the API's own schemas; a refusal comes back in place, beside the
field it concerns, with what was typed kept (never raw JSON, never a page of its own)."""

from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.datastructures import FormData

from app.errors import Conflict, Invalid

M = TypeVar("M", bound=BaseModel)

# A form's own message, not tied to one field (the attempt is closed, say).
WHOLE_FORM = ""


@dataclass
class FormState:
    """What a template needs to show one form again: the refusals and the typed values."""

    form: str = ""
    errors: dict[str, str] = field(default_factory=dict)
    values: dict[str, str] = field(default_factory=dict)

    def error(self, form: str, name: str = WHOLE_FORM) -> str | None:
        return self.errors.get(name) if form == self.form else None

    def value(self, form: str, name: str, default: Any = "") -> Any:
        if form == self.form and name in self.values:
            return self.values[name]
        return "" if default is None else default


class FormRefused(Exception):
    """A form that cannot be taken as typed; `page` says which page shows it again."""

    def __init__(
        self, state: FormState, page: str, page_id: int | None, status_code: int = 422
    ) -> None:
        super().__init__("; ".join(f"{k or 'form'}: {v}" for k, v in state.errors.items()))
        self.state, self.page, self.page_id = state, page, page_id
        self.status_code = status_code


class Form:
    """One submitted form of a page: `parse` it, and run the action inside `with form:` so a
    refusal by the domain (409, 422) is shown in the form as well."""

    def __init__(self, data: FormData, name: str, page: str, page_id: int | None = None) -> None:
        self.data, self.name, self.page, self.page_id = data, name, page, page_id
        self.values = {k: v for k, v in data.items() if isinstance(v, str) and k != "csrf_token"}

    def refuse(self, errors: dict[str, str], status_code: int = 422) -> FormRefused:
        state = FormState(self.name, errors, self.values)
        return FormRefused(state, self.page, self.page_id, status_code)

    def parse(self, model: type[M], fields: list[str], **extra: Any) -> M:
        """The fields as the API's body model; an empty field means 'not given'."""
        data = {
            name: value
            for name in fields
            if isinstance(value := self.data.get(name), str) and value.strip() != ""
        }
        try:
            return model.model_validate({**data, **extra})
        except ValidationError as error:
            errors: dict[str, str] = {}
            for problem in error.errors():
                where = str(problem["loc"][0]) if problem["loc"] else WHOLE_FORM
                name = where if where in fields else WHOLE_FORM
                message = str(problem["msg"]).removeprefix("Value error, ")
                errors.setdefault(name, message)
            raise self.refuse(errors) from None

    def require_confirmation(self) -> None:
        """Destructive forms carry a box the owner ticks (works without JavaScript too)."""
        if self.data.get("confirm") != "yes":
            raise self.refuse({"confirm": "tick the box to confirm: this cannot be undone"})

    def cleared(self, fields: list[str]) -> dict[str, str]:
        """Text fields the owner emptied on purpose: "" is a value, not "not given"."""
        return {name: "" for name in fields if self.data.get(name) == ""}

    def __enter__(self) -> "Form":
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, _: Any
    ) -> None:
        if isinstance(error, Invalid | Conflict):
            status_code = 409 if isinstance(error, Conflict) else 422
            raise self.refuse({WHOLE_FORM: str(error)}, status_code) from error
