"""Every environment variable the engine and ``porto-ledger`` read, named once here.

Each is a field: its variable, its type, its default and what it is for. ``read_engine_environment()`` reads
the process's variables (or the ones it is given) when the engine needs one; a value that does not parse
refuses the whole environment with a message naming each variable at fault (``EnvironmentRefused``). An
empty variable counts as unset. A secret comes inline (``NAME``) or from the file ``NAME_FILE`` names, never
both, and its file is read only when the secret is asked for. The console's environment
(``porto_console/environment.py``) follows the same rules; the engine imports nothing from it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, ValidationError, model_validator
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from ledger_engine.genesis import GENESIS_HASH_PATTERN

# Wider than the clock drift between processes on the owner's host that stamp envelopes, and the time an
# envelope waits in the executor's queue; narrow enough that nothing dated inside it buys an attacker anything.
ADMISSION_SKEW_MS = 5_000
LARGEST_ADMISSION_SKEW_MS = 60_000


class EnvironmentRefused(ValueError):
    """A variable the engine reads is malformed, or a secret is given both ways or cannot be read."""


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


def _refuse(message: str) -> PydanticCustomError:
    return PydanticCustomError("environment", message)


def _admission_skew(given: Any) -> int:
    """Digits only, surrounding blanks aside: not ``5s``, not ``1e3``, not ``-5``."""
    text = given.strip() if isinstance(given, str) else str(given)
    if not re.fullmatch("[0-9]+", text) or not 0 < int(text) <= LARGEST_ADMISSION_SKEW_MS:
        raise _refuse(f"must be a whole number of milliseconds from 1 to {LARGEST_ADMISSION_SKEW_MS}")
    return int(text)


def _genesis_hash(text: str) -> str:
    if not re.fullmatch(GENESIS_HASH_PATTERN, text):
        raise _refuse("must be 64 lowercase hex digits, as `porto-ledger head` prints it")
    return text


AdmissionSkew = Annotated[int, BeforeValidator(_admission_skew)]
GenesisHash = Annotated[str, AfterValidator(_genesis_hash)]


def variable(name: str, default: Any, description: str) -> Any:
    """A field read from the variable ``name``."""
    return Field(default=default, validation_alias=name, description=description)


def secret(name: str, description: str) -> Any:
    return Field(default_factory=lambda: Secret(name), validation_alias=name, description=description)


class EngineEnvironment(BaseSettings):
    """The variables, typed, each with its default. Built by ``read_engine_environment``; never changed after."""

    model_config = SettingsConfigDict(frozen=True, extra="ignore", case_sensitive=True,
                                      arbitrary_types_allowed=True)

    admission_skew_ms: AdmissionSkew = variable(
        "PORTO_ADMISSION_SKEW_MS", ADMISSION_SKEW_MS,
        "how far ahead of the owner's clock a new command may be dated; more is ADMISSION_TIME_AHEAD "
        "(docs/adr/0093)")
    security_log: Path | None = variable(
        "PORTO_SECURITY_LOG", None,
        "the private security log's file; unset: <ledger directory>.security.jsonl beside the ledger")
    genesis_hash: GenesisHash | None = variable(
        "PORTO_GENESIS_HASH", None,
        "porto-ledger's default --genesis-hash: the only genesis verify, verify-export, replay, restore and "
        "recover accept history from")
    restic_password: Secret = secret(
        "RESTIC_PASSWORD", "the password of the restic repository porto-ledger recover reads, unless "
                           "--password-file names one")

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource,
                                   dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource,
                                   ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Only the variables ``read_engine_environment`` hands over: no .env file, nothing read behind its back."""
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
    def _pair_secrets_with_their_files(cls, variables: dict[str, Any]) -> dict[str, Any]:
        paired = dict(variables)
        for name in cls.secret_variables():
            paired[name] = _secret(name, paired.get(name), paired.pop(f"{name}_FILE", None))
        return paired


def _variable_of(info: FieldInfo) -> str:
    """The variable a field reads: ``variable`` and ``secret`` name it by its plain name."""
    assert isinstance(info.validation_alias, str), info
    return info.validation_alias


def _secret(name: str, inline: str | None, path: str | None) -> Secret:
    # Given both ways, which one counts is a guess (restic itself takes the file): refused rather than guessed.
    if inline and path:
        raise _refuse(f"set {name} or {name}_FILE, not both")
    return Secret(name, inline or None, Path(path) if path else None)


def read_engine_environment(variables: Mapping[str, str] | None = None) -> EngineEnvironment:
    """The engine's environment, typed: ``variables``, or this process's own; ``EnvironmentRefused`` names
    what is wrong."""
    source = os.environ if variables is None else variables
    # Text, which each field parses into its type: not yet the types the constructor's signature names.
    given: dict[str, Any] = {name: source[name] for name in EngineEnvironment.variables() if source.get(name)}
    try:
        return EngineEnvironment(**given)
    except ValidationError as refused:
        raise EnvironmentRefused("the environment is refused: " + "; ".join(
            _explained(error) for error in refused.errors(include_url=False))) from None


def _explained(error: Mapping[str, Any]) -> str:
    """One refusal, naming its variable; a secret's value is never repeated."""
    if not error["loc"]:
        return str(error["msg"])
    name = str(error["loc"][0])
    return f"{name}={error['input']!r}: {error['msg']}"
