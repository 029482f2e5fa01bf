"""The ledger owner: admission, the serial executor, the journal chain."""
