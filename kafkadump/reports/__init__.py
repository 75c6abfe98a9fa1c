"""What a command computes: one module per report, each opening its inputs, running the decoders,
yielding the report's items and counting problems in a ``Tally``.  Nothing here prints.
"""
