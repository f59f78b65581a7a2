"""Read pages the way a browser submits them: the fields of a form, and the text of
an element, with the standard library's HTML parser."""

from __future__ import annotations

from html.parser import HTMLParser


class _FormReader(HTMLParser):
    def __init__(self, form_id: str) -> None:
        super().__init__(convert_charrefs=True)
        self.form_id = form_id
        self.inside = False
        self.fields: list[tuple[str, str]] = []
        self._select: str | None = None
        self._selected: str | None = None
        self._first_option: str | None = None
        self._textarea: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form" and a.get("id") == self.form_id:
            self.inside = True
        if not self.inside:
            return
        if tag == "input" and a.get("name") and a.get("type") not in ("submit", "button"):
            if a.get("type") in ("checkbox", "radio"):
                if "checked" in a:
                    self.fields.append((a["name"], a.get("value") or "on"))
            else:
                self.fields.append((a["name"], a.get("value", "")))
        elif tag == "select":
            self._select, self._selected, self._first_option = a.get("name"), None, None
        elif tag == "option" and self._select is not None:
            if self._first_option is None:
                self._first_option = a.get("value", "")
            if "selected" in a:
                self._selected = a.get("value", "")
        elif tag == "textarea":
            self._textarea, self._text = a.get("name"), []

    def handle_endtag(self, tag: str) -> None:
        if tag == "form" and self.inside:
            self.inside = False
        elif tag == "select" and self._select:
            self.fields.append(
                (
                    self._select,
                    self._selected if self._selected is not None else self._first_option or "",
                )
            )
            self._select = None
        elif tag == "textarea" and self._textarea:
            text = "".join(self._text)
            self.fields.append((self._textarea, text[1:] if text.startswith("\n") else text))
            self._textarea = None

    def handle_data(self, data: str) -> None:
        if self._textarea is not None:
            self._text.append(data)


def form_fields(html: str, form_id: str = "editor") -> dict[str, str]:
    """What submitting the form would send (checked boxes only, selected options)."""
    reader = _FormReader(form_id)
    reader.feed(html)
    return dict(reader.fields)


class _ElementText(HTMLParser):
    """Text inside every element whose attribute ``key`` equals ``value``."""

    VOID = frozenset({"input", "br", "img", "meta", "link", "hr", "col", "source", "wbr"})

    def __init__(self, key: str, value: str) -> None:
        super().__init__(convert_charrefs=True)
        self.key, self.value = key, value
        self.depth = 0
        self.found: list[list[str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.VOID:
            return
        if self.depth:
            self.depth += 1
            self.found[-1].append(" ")  # cells and items read as separate words
        elif dict(attrs).get(self.key) == self.value:
            self.depth = 1
            self.found.append([])

    def handle_endtag(self, tag: str) -> None:
        if self.depth and tag not in self.VOID:
            self.depth -= 1
            if self.depth:
                self.found[-1].append(" ")

    def handle_data(self, data: str) -> None:
        if self.depth:
            self.found[-1].append(data)


def element_text(html: str, key: str, value: str) -> list[str]:
    """The whitespace-normalised text of each element with ``key="value"``."""
    reader = _ElementText(key, value)
    reader.feed(html)
    return [" ".join("".join(parts).split()) for parts in reader.found]
