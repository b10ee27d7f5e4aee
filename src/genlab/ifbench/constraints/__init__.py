"""The constraint units, one folder per family and one module per id category.

``ifeval/`` holds the 25 IFEval ids, ``ifbench/`` the 58 IFBench test ids and ``iftrain/`` the 29 IFTrain ids;
``ifbench/count.py`` holds every ``count:*`` id of IFBench, and so on. A unit is a module-level
:class:`~genlab.ifbench.core.Constraint` made with :func:`~genlab.ifbench.core.constraint`; :mod:`helpers` and
:mod:`wordlists` are shared by several modules. :mod:`genlab.ifbench.registry` finds the units by walking this
package, so adding a module here is all it takes to add constraints (see docs/ifbench.md, "Add a constraint").
This package imports nothing on its own.
"""
