"""WCAG 2.1 AA basics in Chromium (issue 27): the first Tab stop is a visible "Skip to main content"
link that moves focus to the page's main content; a navigation link reached by the keyboard shows a
focus ring; the text of every badge, legend swatch and unit of the MIG drawing contrasts with its fill
at 4.5:1 or more (computed from the colours the browser renders); and who holds a unit on the node
drawing is reachable by keyboard, not only in a hover tooltip."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from inventory.models import Node
from tests.browser.test_page_widths import mig_node
from tests.inventory import factories as inv

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# The contrast ratio of WCAG 2.1 (relative luminance of sRGB), of each visible element's text colour
# against the first opaque background behind it.
CONTRASTS = """
(selector) => {
  const rgba = (s) => { const m = s.match(/rgba?\\(([^)]+)\\)/); if (!m) return null;
    const p = m[1].split(",").map(parseFloat);
    return {r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1}; };
  const channel = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
  const lum = (c) => 0.2126 * channel(c.r) + 0.7152 * channel(c.g) + 0.0722 * channel(c.b);
  const behind = (el) => { for (let e = el; e; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor); if (c && c.a > 0.5) return c; }
    return {r: 255, g: 255, b: 255, a: 1}; };
  return [...document.querySelectorAll(selector)]
    .filter((e) => e.getClientRects().length && e.textContent.trim())
    .map((e) => { const a = lum(rgba(getComputedStyle(e).color)), b = lum(behind(e));
      return [e.className + " " + e.textContent.trim().slice(0, 30),
              Math.round(((Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)) * 100) / 100]; });
}
"""
COLOURED = ".badge, .swatch, .segment, .unit, td.heat:not(.heat-none), mark, .error, .skip-link"


def contrasts(page: Page) -> list[tuple[str, float]]:
    return [(label, ratio) for label, ratio in page.evaluate(CONTRASTS, COLOURED)]


def seed(cast: Any) -> Node:
    node = mig_node(cast)
    # a node not ready: the overview's fleet panel shows a warning badge inside its link
    troubled = inv.node("gpu-down", in_pool=node.pool)
    Node.objects.filter(pk=troubled.pk).update(ready=False, cordoned=True)
    return node


def test_the_skip_link_comes_first_and_focus_is_always_visible(transactional_db, cast, page: Page, login):
    seed(cast)
    base = login(page, "pat")
    page.goto(f"{base}/")

    page.keyboard.press("Tab")
    skip = page.locator(".skip-link")
    expect(skip).to_be_focused()
    expect(skip).to_have_text("Skip to main content")
    box = skip.bounding_box()
    assert box is not None and box["y"] >= 0 and box["height"] > 10  # on screen while it has focus
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "main"

    # from the top again: the brand, the menu's sections; each shows a ring when the keyboard lands
    page.goto(f"{base}/")
    for _ in range(3):
        page.keyboard.press("Tab")
    focused = page.evaluate(
        "(() => { const e = document.activeElement, s = getComputedStyle(e); return [e.closest('header')"
        " !== null, e.textContent.trim(), s.outlineStyle, parseFloat(s.outlineWidth)]; })()"
    )
    in_header, label, style, ring = focused
    assert in_header and label == "Overview", focused
    assert style == "solid" and ring >= 2, f"no visible focus on the {label} link: {style} {ring}px"


def test_badges_swatches_and_mig_slices_read_at_4_5_to_1(transactional_db, cast, page: Page, login):
    node = seed(cast)
    base = login(page, "pat")
    checked = 0
    for path in (
        "/",
        reverse("inventory"),
        reverse("inventory-node", args=[node.pk]),
        reverse("tenant-tree"),
    ):
        page.goto(f"{base}{path}")
        found = contrasts(page)
        checked += len(found)
        low = [(label, ratio) for label, ratio in found if ratio < 4.5]
        assert low == [], f"{path}: text below 4.5:1: {low}"
    assert checked >= 10  # badges, the legend and the slices were all measured

    # the not-ready badge inside the overview's link, the one that read at 3.9:1
    page.goto(f"{base}/")
    badge = page.get_by_test_id("attention").locator(".badge.warn").first
    expect(badge).to_contain_text("not ready")


def test_who_holds_a_unit_is_reachable_by_keyboard(transactional_db, cast, page: Page, login):
    node = seed(cast)
    base = login(page, "pat")
    page.goto(f"{base}{reverse('inventory-node', args=[node.pk])}")

    held = page.locator(".segment[tabindex='0']", has_text="vision").first
    held.focus()
    expect(held).to_be_focused()
    described = held.get_attribute("aria-describedby")
    assert described
    holder = page.locator(f"#{described}")
    expect(holder).to_contain_text("vision")  # the description names the holder, not only a title

    # and a person reads it: the card's "Who holds what" opens from the keyboard
    holders = page.locator("details.holders", has=holder)
    holders.locator("summary").focus()
    page.keyboard.press("Enter")
    expect(holder).to_be_visible()
