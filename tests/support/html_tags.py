"""A page's start tags and their attributes, read as a browser's parser would."""

from __future__ import annotations

from html.parser import HTMLParser


class Tags(HTMLParser):
    """Every start tag and its attributes, as a browser's parser would see them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))


def tags_of(page: str) -> Tags:
    parser = Tags()
    parser.feed(page)
    parser.close()
    return parser
