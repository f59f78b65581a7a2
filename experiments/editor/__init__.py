"""The browser's experiment editor: a form tab and a YAML tab over one spec document."""

from experiments.editor.document import SECTIONS, blank_document
from experiments.editor.editor import Editor
from experiments.editor.forms import MetaForm

__all__ = ["SECTIONS", "Editor", "MetaForm", "blank_document"]
