"""Every environment variable the engine and ``porto-ledger`` read, named once here.

Each is a field: its variable, its type, its default and what it is for. ``read_engine_environment()`` reads
the process's variables (or the ones it is given) when the engine needs one; a value that does not parse
refuses the whole environment with a message naming each variable at fault (``EnvironmentRefused``). An
empty variable counts as unset. A secret comes inline (``NAME``) or from the file ``NAME_FILE`` names, never
both, and its file is read only when the secret is asked for. The console's environment
(``porto_console/environment.py``) is built from the same pieces: ``variable`` and ``secret`` fields on a
``TypedEnvironment``, read by ``read_typed``; it takes the variables both read from ``EngineEnvironment``. The
engine imports nothing from it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BeforeValidator, Field, ValidationError, model_validator
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from ledger_engine.genesis import GENESIS_HASH_PATTERN
from ledger_engine.open_json import Unvalidated

# Wider than the clock drift between processes on the owner's host that stamp envelopes, and the time an
# envelope waits in the executor's queue; narrow enough that nothing dated inside it buys an attacker anything.
ADMISSION_SKEW_MS = 5_000
LARGEST_ADMISSION_SKEW_MS = 60_000


class EnvironmentRefused(ValueError):
    """A variable is malformed, or missing where the work asked for needs it, or a secret is given both ways or
    cannot be read."""


@dataclass(frozen=True)
class Secret:
    """A secret given inline (``NAME``) or in a file (``NAME_FILE``): read when asked for, never printed."""

    variable: str
    inline: str | None = field(default=None, repr=False)
    path: Path | None = None

    @property
    def given(self) -> bool:
        return bool(self.inline or self.path)

    def value(self) -> str | None:
        """The secret, or None when neither variable is set."""
        if self.path is None:
            return self.inline
        try:
            return self.path.read_text().strip()
        except OSError as error:
            raise EnvironmentRefused(f"{self.variable}_FILE names {self.path}, which cannot be read: "
                                     f"{error.strerror}") from None


def refuse(message: str) -> PydanticCustomError:
    """A field's refusal: its message follows the variable's name and value in ``EnvironmentRefused``."""
    return PydanticCustomError("environment", message)


def _admission_skew(given: Any) -> int:
    """Digits only, surrounding blanks aside: not ``5s``, not ``1e3``, not ``-5``."""
    text = given.strip() if isinstance(given, str) else str(given)
    if not re.fullmatch("[0-9]+", text) or not 0 < int(text) <= LARGEST_ADMISSION_SKEW_MS:
        raise refuse(f"must be a whole number of milliseconds from 1 to {LARGEST_ADMISSION_SKEW_MS}")
    return int(text)


def _genesis_hash(text: str) -> str:
    if not re.fullmatch(GENESIS_HASH_PATTERN, text):
        raise refuse("must be 64 lowercase hex digits, as `porto-ledger head` prints it")
    return text


AdmissionSkew = Annotated[int, BeforeValidator(_admission_skew)]
GenesisHash = Annotated[str, AfterValidator(_genesis_hash)]


def variable(name: str, default: Any, description: str, **constraints: Any) -> Any:
    """A field read from the variable ``name``; a callable default is worked out from the fields above it."""
    given = {"default_factory": default} if callable(default) else {"default": default}
    return Field(validation_alias=name, description=description, **given, **constraints)


def secret(name: str, description: str) -> Any:
    return Field(default_factory=lambda: Secret(name), validation_alias=name, description=description)


class TypedEnvironment(BaseSettings):
    """Variables as ``variable`` and ``secret`` fields, each typed with its default: read by ``read_typed`` from
    the variables it is handed and nothing else, never changed after."""

    model_config = SettingsConfigDict(frozen=True, extra="ignore", case_sensitive=True,
                                      arbitrary_types_allowed=True)

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource,
                                   dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource,
                                   ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Only the variables ``read_typed`` hands over: no .env file, nothing read behind its back."""
        return (init_settings,)

    @classmethod
    def secret_variables(cls) -> list[str]:
        return [_variable_of(info) for info in cls.model_fields.values() if info.annotation is Secret]

    @classmethod
    def variables(cls) -> list[str]:
        """Every variable read, a secret's ``NAME_FILE`` with it."""
        plain = [_variable_of(info) for info in cls.model_fields.values()]
        return plain + [f"{name}_FILE" for name in cls.secret_variables()]

    @model_validator(mode="before")
    @classmethod
    def _pair_secrets_with_their_files(cls, variables: Unvalidated) -> Unvalidated:
        paired = dict(variables)
        for name in cls.secret_variables():
            paired[name] = _secret(name, paired.get(name), paired.pop(f"{name}_FILE", None))
        return paired


class EngineEnvironment(TypedEnvironment):
    """The engine's variables. Built by ``read_engine_environment``."""

    admission_skew_ms: AdmissionSkew = variable(
        "PORTO_ADMISSION_SKEW_MS", ADMISSION_SKEW_MS,
        "how far ahead of the owner's clock a new command may be dated; more is ADMISSION_TIME_AHEAD "
        "(docs/adr/0093)")
    security_log: Path | None = variable(
        "PORTO_SECURITY_LOG", None,
        "the private security log's file; unset: <ledger directory>.security.jsonl beside the ledger")
    # Read by the console too, which takes these two fields as they are.
    genesis_hash: GenesisHash | None = variable(
        "PORTO_GENESIS_HASH", None,
        "the only genesis this deployment's ledger and backups may have; porto-ledger's default --genesis-hash "
        "for verify, verify-export, replay, restore and recover")
    restic_password: Secret = secret(
        "RESTIC_PASSWORD", "the restic repository's password: backups are written with it, and porto-ledger "
                           "recover reads with it unless --password-file names one")


def _variable_of(info: FieldInfo) -> str:
    """The variable a field reads: ``variable`` and ``secret`` name it by its plain name."""
    assert isinstance(info.validation_alias, str), info
    return info.validation_alias


def _secret(name: str, inline: str | None, path: str | None) -> Secret:
    # Given both ways, which one counts is a guess (restic itself takes the file): refused rather than guessed.
    if inline and path:
        raise refuse(f"set {name} or {name}_FILE, not both")
    return Secret(name, inline or None, Path(path) if path else None)


def read_engine_environment(variables: Mapping[str, str] | None = None) -> EngineEnvironment:
    """The engine's environment, typed: ``variables``, or this process's own; ``EnvironmentRefused`` names
    what is wrong."""
    return read_typed(EngineEnvironment, variables)


Typed = TypeVar("Typed", bound=TypedEnvironment)


def read_typed(kind: type[Typed], variables: Mapping[str, str] | None = None) -> Typed:
    """``kind`` read from ``variables``, or from this process's own; ``EnvironmentRefused`` names each variable
    at fault."""
    source = os.environ if variables is None else variables
    # Text, which each field parses into its type: not yet the types the constructor's signature names.
    given: Unvalidated = {name: source[name] for name in kind.variables() if source.get(name)}
    try:
        return kind(**given)
    except ValidationError as refused:
        raise EnvironmentRefused("the environment is refused: " + "; ".join(
            _explained(error) for error in refused.errors(include_url=False)
            if error["type"] != "default_factory_not_called")) from None  # a default waiting on a refused one


def _explained(error: Mapping[str, Any]) -> str:
    """One refusal, naming its variable; a secret's value is never repeated."""
    if not error["loc"]:
        return str(error["msg"])
    name = str(error["loc"][0])
    return f"{name}={error['input']!r}: {error['msg']}"
