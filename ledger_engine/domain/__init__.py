"""The pure rules: typed commands in, changes or a stable rejection out.

Nothing here reads a clock, draws randomness, touches the network or imports
the store. State arrives through a read-only ``StateView``.
"""
