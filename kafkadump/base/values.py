"""Small value classes without :mod:`dataclasses` (whose import, with :mod:`inspect`, costs a data
command's start-up about a third of a bare Python start).

A subclass names its fields in ``__match_args__`` and sets them in its own
``__init__`` (keyword arguments by field name, as a dataclass's).  It gets
what ``@dataclass`` gives: equality between instances of the same class by
the fields, in order (``__eq__`` returns NotImplemented for any other class),
``repr`` as ``Name(field=value, ...)`` and :meth:`Value.replace` (for
:func:`dataclasses.replace`).  :class:`Value` is mutable and unhashable, as
``@dataclass``; :class:`FrozenValue` hashable and read-only, as
``@dataclass(frozen=True)`` (assignment raises
:class:`dataclasses.FrozenInstanceError`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # (a TypeVar bound by name compiles the name at run time: milliseconds at start-up)
    from typing import TypeVar

    _V = TypeVar("_V", bound="Value")


class Value:
    """Equality, repr and :meth:`replace` by the fields named in ``__match_args__``."""

    __slots__ = ()  # a subclass naming its fields in __slots__ has no __dict__ (as @dataclass(slots=True))
    __match_args__: tuple[str, ...] = ()
    __hash__ = None  # type: ignore[assignment]  # mutable: unhashable, as @dataclass with eq

    def _field_values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__match_args__)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._field_values() == other._field_values()

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__match_args__)
        return f"{type(self).__qualname__}({inner})"

    def replace(self: _V, **changes: Any) -> _V:
        """A copy with ``changes`` (field name -> value), made by the class's ``__init__``."""
        fields = {name: getattr(self, name) for name in self.__match_args__}
        unknown = set(changes) - set(fields)
        if unknown:
            raise TypeError(f"{type(self).__qualname__} has no field {sorted(unknown)[0]!r}")
        fields.update(changes)
        return type(self)(**fields)


class FrozenValue(Value):
    """A :class:`Value` whose fields are set once, by ``__init__`` (through :meth:`_set`): hashable."""

    __slots__ = ()

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(self._field_values())

    def _set(self, **fields: Any) -> None:
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        from dataclasses import FrozenInstanceError  # (only when it is raised)

        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot delete field {name!r}")


__all__ = ["Value", "FrozenValue"]
