"""Words for people: enum values, day numbers and counts as the screens show them."""

from __future__ import annotations

import pytest

from porto_console.console.labels import human
from porto_console.console.templatetags.console import count_of, day, label, labels_of


@pytest.mark.parametrize("raw, shown", [
    ("prepared_in_error", "Prepared in error"), ("approved", "Approved"), ("ok", "OK"),
    ("cancelled_with_confirmed_payments", "Cancelled with confirmed payments"), ("any status", "Any status"),
    ("usdc_total", "USDC total"), ("ApprovePayoutRun", "ApprovePayoutRun"), ("0xabc/def", "0xabc/def"), ("", ""),
])
def test_enum_values_read_as_words_and_anything_else_is_left_alone(raw, shown):
    assert human(raw) == shown


def test_an_enum_shows_its_words_with_the_raw_value_on_hover():
    assert label("prepared_in_error") == '<span class="enum" title="prepared_in_error">Prepared in error</span>'
    assert labels_of(["late", "self_serving_node"]) == (
        '<span class="enum" title="late">Late</span>, <span class="enum" title="self_serving_node">Self serving node</span>')
    assert label(None) == "" and labels_of(None) == ""


def test_a_day_number_is_its_utc_date_with_the_number_on_hover():
    assert day(20728) == '<time datetime="2026-10-02" title="day 20728">02 Oct 2026</time>'
    assert day(0) == '<time datetime="1970-01-01" title="day 0">01 Jan 1970</time>'
    assert day("") == ""


@pytest.mark.parametrize("number, noun, shown", [
    (1, "payment", "1 payment"), (2, "payment", "2 payments"), (0, "payment", "0 payments"),
    (1, "mismatch,mismatches", "1 mismatch"), (3, "mismatch,mismatches", "3 mismatches"),
])
def test_counts_agree_with_their_noun(number, noun, shown):
    assert count_of(number, noun) == shown
