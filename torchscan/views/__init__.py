"""Views: what people read of a report — HTML pages, SVG figures, CSV tables and the terminal table.

One subpackage per report kind (``analysis``: the module cost explorer, its SVG snapshot and the
``summary`` table; ``comparison``: before/after of two analyses; ``benchmark``, ``flops`` (FlopReport
and ProfileReport), ``generation``, ``memory``, ``merged``, ``scaling``) and ``common`` for the shared
drawing and text primitives (one number style for every page). ``render.py`` (``render_report``),
``page_kinds.py`` (kind -> page) and ``csv_report.py`` (kind -> CSV table) dispatch by report kind.

Views read reports only: they import the ``report`` package (schemas, validators) and never torch,
never ``analysis``, ``measure``, ``process`` or ``cli``. CSS and JS are package data (``assets/``).
"""
