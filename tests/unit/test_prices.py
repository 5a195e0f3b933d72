"""Cost arithmetic (docs/money.md#prices) and money formatting: pure, no database."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger import Price, TokenUsage, cost_micros, format_rupiah

FLASH = Price(
    id=1,
    model="*",
    input_per_mtok_idr=10_000,
    cached_input_per_mtok_idr=2_500,
    output_per_mtok_idr=42_000,
    valid_from=datetime(2020, 1, 1, tzinfo=UTC),
)
FREE = Price(
    id=2,
    model="free",
    input_per_mtok_idr=0,
    cached_input_per_mtok_idr=0,
    output_per_mtok_idr=0,
    valid_from=datetime(2020, 1, 1, tzinfo=UTC),
)


@pytest.mark.parametrize(
    ("tokens", "expected_micros"),
    [
        # Rp 10,000 per million input tokens is 10,000 µRp per token.
        pytest.param(TokenUsage(prompt_tokens=1_000), 10_000_000, id="input"),
        pytest.param(TokenUsage(prompt_tokens=1_000, output_tokens=100), 10_000_000 + 4_200_000, id="input+output"),
        # 400 of the 1,000 prompt tokens came from the cache: 600 at 10,000 + 400 at 2,500.
        pytest.param(TokenUsage(prompt_tokens=1_000, cached_tokens=400), 6_000_000 + 1_000_000, id="cached split"),
        # The tool-use prompt is input too.
        pytest.param(TokenUsage(prompt_tokens=100, tool_use_prompt_tokens=50), 1_500_000, id="tool-use prompt"),
        pytest.param(
            TokenUsage(prompt_tokens=100, tool_use_prompt_tokens=50, cached_tokens=120),
            30 * 10_000 + 120 * 2_500,
            id="cached covers tool-use",
        ),
        # More cached than sent: input clamps at 0 and only the 10 sent tokens are billed, cached.
        pytest.param(TokenUsage(prompt_tokens=10, cached_tokens=50), 10 * 2_500, id="clamp"),
        pytest.param(TokenUsage(cached_tokens=50), 1, id="clamp to nothing, floor"),
        # Thinking is billed as output.
        pytest.param(TokenUsage(output_tokens=10, thinking_tokens=20), 30 * 42_000, id="thinking is output"),
        pytest.param(TokenUsage(thinking_tokens=1), 42_000, id="thinking only"),
        pytest.param(TokenUsage(), 0, id="no usage, no charge"),
    ],
)
def test_cost_micros(tokens: TokenUsage, expected_micros: int) -> None:
    assert cost_micros(price=FLASH, tokens=tokens) == expected_micros


def test_a_call_with_usage_costs_at_least_one_micro() -> None:
    assert cost_micros(price=FREE, tokens=TokenUsage(prompt_tokens=5, output_tokens=1)) == 1
    assert cost_micros(price=FREE, tokens=TokenUsage()) == 0


def test_a_million_tokens_cost_the_rate_in_rupiah() -> None:
    micros = cost_micros(price=FLASH, tokens=TokenUsage(output_tokens=1_000_000))
    assert micros == 42_000 * 1_000_000  # Rp 42,000


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3", 10**9 + 1])
def test_token_counts_are_small_non_negative_ints(bad: object) -> None:
    with pytest.raises(ValueError, match="prompt_tokens"):
        TokenUsage(prompt_tokens=bad)  # type: ignore[arg-type]


counts = st.integers(min_value=0, max_value=10**7)


@given(prompt=counts, cached=counts, tool=counts, output=counts, thinking=counts)
def test_cost_is_the_exact_integer_formula(prompt: int, cached: int, tool: int, output: int, thinking: int) -> None:
    tokens = TokenUsage(
        prompt_tokens=prompt,
        cached_tokens=cached,
        tool_use_prompt_tokens=tool,
        output_tokens=output,
        thinking_tokens=thinking,
    )
    cost = cost_micros(price=FLASH, tokens=tokens)
    sent = prompt + tool
    billed_cached = min(cached, sent)
    formula = (sent - billed_cached) * 10_000 + billed_cached * 2_500 + (output + thinking) * 42_000
    assert type(cost) is int
    assert cost == max(formula, 0 if tokens.is_zero else 1)
    # More usage never costs less.
    more = TokenUsage(
        prompt_tokens=prompt + 1,
        cached_tokens=cached,
        tool_use_prompt_tokens=tool,
        output_tokens=output,
        thinking_tokens=thinking,
    )
    assert cost_micros(price=FLASH, tokens=more) >= cost


def test_receipts_name_the_price_row_and_every_count() -> None:
    assert FLASH.as_receipt() == {
        "id": 1,
        "input_per_mtok_idr": 10_000,
        "cached_input_per_mtok_idr": 2_500,
        "output_per_mtok_idr": 42_000,
    }
    assert TokenUsage(prompt_tokens=3, thinking_tokens=2).as_receipt() == {
        "prompt_tokens": 3,
        "cached_tokens": 0,
        "tool_use_prompt_tokens": 0,
        "output_tokens": 0,
        "thinking_tokens": 2,
    }


@pytest.mark.parametrize(
    ("micros", "text"),
    [
        (5_000_000_000, "Rp 5.000"),
        (4_999_999_999, "Rp 4.999"),
        (0, "Rp 0"),
        (999_999, "Rp 0"),
        # Floored: an overdrawn wallet never looks less overdrawn than it is.
        (-1, "-Rp 1"),
        (-1_500_000, "-Rp 2"),
        (1_234_567_000_000, "Rp 1.234.567"),
    ],
)
def test_format_rupiah_floors(micros: int, text: str) -> None:
    assert format_rupiah(micros) == text
