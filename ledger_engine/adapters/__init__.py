"""The admission adapter: raw inputs in, verified and stored evidence, durable envelopes out.

Everything nondeterministic happens here, before the ledger sees a command:
signatures are checked, evidence bytes are stored by digest, IDs and the
admission time are chosen, and the envelope is stored by command ID before it
is submitted, so a retry submits the very same envelope and a lost response is
answered by resolving the command ID. Credentials and raw personal data stay
out of envelopes: raw inputs live only in the evidence store.

- ``gateway``: the general path every caller uses (``CommandGateway``).
- ``signatures``: Ed25519 signed documents.
- ``billing``, ``nodes``, ``receipts``, ``grants``: the streaming inputs.
"""
