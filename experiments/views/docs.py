"""The Docs section: the repository's ``docs/`` pages inside the app (issue 16 §2)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from experiments import docs


@login_not_required  # documentation is no secret: readable before signing in
@require_GET
def doc_index(request: HttpRequest) -> HttpResponse:
    return render(request, "experiments/docs.html", {"pages": docs.doc_index(), "page": None})


@login_not_required
@require_GET
def doc_page(request: HttpRequest, slug: str) -> HttpResponse:
    page = docs.doc_page(slug)
    if page is None:
        raise Http404("No such page")
    return render(request, "experiments/docs.html", {"pages": docs.doc_index(), "page": page})
