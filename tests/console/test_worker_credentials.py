"""A worker credential carries no two duties kept apart: one that signs payments never observes them (docs/adr/0090)."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from porto_console.internal_api import credentials
from porto_console.internal_api.models import WorkerCredential

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("observing", ["RecordTransferObservation", "RecordLandedAttempt",
                                       "RecordCommitmentObservation"])
def test_a_credential_that_signs_attempts_is_not_issued_with_an_observation(observing):
    with pytest.raises(credentials.RoleConflict, match="ROLE_CONFLICT") as refused:
        credentials.issue("payments-1", "payments-1", ["ClaimEffect", "RecordSignedAttempt", observing])
    assert f"refusing {', '.join(sorted(['RecordSignedAttempt', observing]))} on one credential" in str(refused.value)
    assert "observer and signer together" in str(refused.value)
    assert not WorkerCredential.objects.exists()


def test_the_command_line_refuses_the_payment_workers_old_single_credential(capsys):
    with pytest.raises(CommandError, match="ROLE_CONFLICT: .* observer and signer together"):
        call_command("worker_credentials", "issue", "payments-1", "--actor", "payments-1",
                     *(option for role in ("dispatcher", "signer", "observer") for option in ("--role", role)))
    assert not WorkerCredential.objects.exists()


def test_a_payment_worker_gets_one_credential_to_sign_and_another_to_observe():
    signing = credentials.commands_for_role("dispatcher") + credentials.commands_for_role("signer")
    observing = credentials.commands_for_role("dispatcher") + credentials.commands_for_role("observer")
    assert credentials.issue("payments-1", "payments-1", signing)[0].may_submit("RecordSignedAttempt")
    observer = credentials.issue("payments-1-observer", "payments-1-observer", observing)[0]
    assert observer.may_submit("RecordTransferObservation") and not observer.may_submit("RecordSignedAttempt")


def test_commands_more_than_one_role_may_submit_bind_no_duty():
    """ClaimEffect is the dispatcher's or the committer's: carrying it says nothing of signing or observing."""
    credential, _ = credentials.issue("committer-1", "committer-1", credentials.commands_for_role("committer")
                                      + credentials.commands_for_role("observer"))
    assert credential.may_submit("RecordCommitmentObservation") and credential.may_submit("ClaimEffect")
