"""The Porto finance console: Django admin screens and the internal worker API.

Django writes no domain data. Every change is a typed command envelope handed
to the in-process ledger owner (``porto_console.ledger``).
"""
