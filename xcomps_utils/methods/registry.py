"""The registry of methods: one object per method, by name.

Every front end and the run machinery (:mod:`xcomps_utils.runs`: planner, execute, store, cli,
sweep, audit) reads the methods from :data:`METHODS` and asks the object (a
:class:`xcomps_utils.methods.base.Method`) what it needs; none of them names a method. Adding a
method is one module (a subclass of :class:`~xcomps_utils.methods.base.Method` with its
declaration and its :meth:`~xcomps_utils.methods.base.Method.compute_shard`) plus its line here.
Importing the registry imports no torch (a method imports its model code when it computes).
"""

from __future__ import annotations

from ..errors import InputError
from .base import Method
from .direct import Direct
from .meta import Meta
from .neuro import Neuro
from .perplexity import TokenPerplexity

__all__ = ["METHODS", "DEFAULT_METHOD", "register"]

#: The methods by name, in the order the command line offers them.
METHODS: dict[str, Method] = {}


def register(method: Method) -> Method:
    """Add a method object to :data:`METHODS` under its ``name`` (a name registered twice is an
    error); returns it."""
    if not method.name or method.name in METHODS:
        raise InputError(f"method name {method.name!r} is empty or registered already; give "
                         f"the method a name of its own")
    METHODS[method.name] = method
    return method


for _method in (Direct(), Meta(), Neuro(), TokenPerplexity()):
    register(_method)

#: The method a run computes when none is named (the first registered).
DEFAULT_METHOD = next(iter(METHODS))
