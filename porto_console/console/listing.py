"""Search, a date range and sortable columns for any list: the one piece every list screen shares.

A list says what it can be searched by (each search: part of some text on the row, any case), which
time its date range applies to, and how each sortable column orders a row. From that it builds the GET
form, reads the query from it, and keeps the matching rows in order. Every match is read before the
page is cut, so the total and the sort cover all of them (``docs/adr/0047``, ``docs/adr/0059``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import Any, Callable, Iterable, Mapping

from django import forms

from ledger_engine.amounts import parse_amount

DAY_MS = 86_400_000
RANGE_REVERSED = "DATE_RANGE_REVERSED"
Row = Any


@dataclass(frozen=True)
class Search:
    name: str  # the GET parameter
    label: str
    texts: Callable[[Row], Iterable[str]]  # what on the row the search looks in


def text(name: str) -> Callable[[Row], Iterable[str]]:
    """A search that looks in one field of a row, a dict or a record object."""
    return lambda row: (str(_field(row, name) or ""),)


@dataclass(frozen=True)
class DateRange:
    name: str  # GET parameters ``<name>_from`` and ``<name>_to``
    label: str
    at_ms: Callable[[Row], int | None]


REQUESTED = DateRange("requested", "Requested from", lambda row: _field(row, "requested_at_ms"))


@dataclass(frozen=True)
class ListQuery:
    terms: Mapping[str, str] = field(default_factory=dict)
    first: date | None = None  # UTC days, both ends included
    last: date | None = None
    sort: str = ""
    descending: bool = True
    descending_first: frozenset[str] = frozenset()  # columns whose first click sorts largest or newest first

    def term(self, name: str) -> str:
        return self.terms.get(name, "")


@dataclass(frozen=True)
class Listing:
    """What one list can be searched and sorted by; ties in any sort fall back to ``identity``."""

    searches: tuple[Search, ...]
    sorts: Mapping[str, Callable[[Row], Any]]
    default_sort: str
    identity: Callable[[Row], str]
    dated: DateRange | None = None
    descending_first: frozenset[str] = frozenset()

    def default_query(self) -> ListQuery:
        return ListQuery(sort=self.default_sort, descending=self.default_sort in self.descending_first,
                         descending_first=self.descending_first)

    def form_class(self, base: type[forms.Form] = forms.Form) -> type[forms.Form]:
        """``base``'s own filters, then the searches, the date range and the hidden sort and direction."""
        fields: dict[str, forms.Field] = {
            search.name: forms.CharField(max_length=200, required=False, label=search.label)
            for search in self.searches}
        if self.dated is not None:
            fields[f"{self.dated.name}_from"] = forms.DateField(required=False, label=self.dated.label,
                                                                widget=forms.DateInput(attrs={"type": "date"}))
            fields[f"{self.dated.name}_to"] = forms.DateField(required=False, label="to",
                                                              widget=forms.DateInput(attrs={"type": "date"}))
        fields["sort"] = forms.ChoiceField(choices=[(name, name) for name in self.sorts], required=False,
                                           widget=forms.HiddenInput)
        fields["dir"] = forms.ChoiceField(choices=[("desc", "desc"), ("asc", "asc")], required=False,
                                          widget=forms.HiddenInput)
        return type(f"{base.__name__}Search", (ListForm, base), {**fields, "listing": self})

    def field_names(self) -> set[str]:
        dated = (f"{self.dated.name}_from", f"{self.dated.name}_to") if self.dated else ()
        return {*(search.name for search in self.searches), *dated, "sort", "dir"}

    def query(self, form: forms.Form) -> ListQuery:
        """What to look for; an invalid search finds what the default list shows."""
        if not form.is_bound or not form.is_valid():
            return self.default_query()
        data = form.cleaned_data
        sort = data["sort"] or self.default_sort
        dated = self.dated.name if self.dated else None
        return ListQuery(
            terms={search.name: data[search.name].strip() for search in self.searches if data[search.name].strip()},
            first=data.get(f"{dated}_from"), last=data.get(f"{dated}_to"), sort=sort,
            descending=data["dir"] == "desc" if data["dir"] else sort in self.descending_first,
            descending_first=self.descending_first)

    def matches(self, row: Row, query: ListQuery) -> bool:
        for search in self.searches:
            wanted = query.term(search.name).lower()
            if wanted and not any(wanted in found.lower() for found in search.texts(row)):
                return False
        return self._in_range(row, query)

    def apply(self, rows: Iterable[Row], query: ListQuery) -> list[Row]:
        """The rows matching ``query``, in its order."""
        found = [row for row in rows if self.matches(row, query)]
        found.sort(key=self.identity)
        found.sort(key=self.sorts[query.sort], reverse=query.descending)
        return found

    def _in_range(self, row: Row, query: ListQuery) -> bool:
        if self.dated is None or (query.first is None and query.last is None):
            return True
        at_ms = self.dated.at_ms(row)
        if at_ms is None:
            return False
        day = at_ms // DAY_MS
        return ((query.first is None or day >= day_number(query.first))
                and (query.last is None or day <= day_number(query.last)))


class ListForm(forms.Form):
    """The fields ``Listing.form_class`` adds, and a date range that must not end before it starts."""

    listing: Listing

    def clean(self):
        cleaned = super().clean()
        dated = self.listing.dated
        if dated is not None:
            start, end = cleaned.get(f"{dated.name}_from"), cleaned.get(f"{dated.name}_to")
            if start and end and start > end:
                raise forms.ValidationError("The range starts after it ends.", code=RANGE_REVERSED)
        return cleaned

    def query(self) -> ListQuery:
        return self.listing.query(self)

    def choice(self, name: str, default: str) -> str:
        """One of the base form's own filters, or ``default`` when it is unset or the form is invalid."""
        return self.filters().get(name) or default

    def filters(self) -> dict[str, str]:
        """The base form's own filters by name ("" when unset); all unset when the form is invalid."""
        own = [name for name in self.fields if name not in self.listing.field_names()]
        valid = self.is_bound and self.is_valid()
        return {name: (self.cleaned_data.get(name) or "") if valid else "" for name in own}


def day_number(value: date) -> int:
    return value.toordinal() - date(1970, 1, 1).toordinal()


def _field(row: Row, name: str) -> Any:
    return row[name] if isinstance(row, Mapping) else getattr(row, name)


def by(name: str, missing: Any = 0) -> Callable[[Row], Any]:
    """A sort key reading one field; ``missing`` stands in for an empty one, so every key compares."""
    return lambda row: _value(_field(row, name), missing)


def _value(value: Any, missing: Any) -> Any:
    return missing if value is None else value


def by_amount(name: str) -> Callable[[Row], int]:
    """A sort key reading a canonical minor-unit amount as the integer it is."""
    return lambda row: parse_amount(str(_field(row, name)))
