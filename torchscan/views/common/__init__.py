"""Shared drawing and text primitives of every page and table: the one number style, page shell and parts,
embedding, diagnostics groups, strips and bars, the method note.

Imports only the report package (never torch, never a page of a report kind); every other views
subpackage may import it.
"""
