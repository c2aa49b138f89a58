"""The token page: create (the secret is shown once), list, revoke."""

from __future__ import annotations

import uuid
from datetime import timedelta

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from gpuplatform.accounts.models import ApiToken, TokenScope
from gpuplatform.accounts.tokens import issue_api_token, revoke_api_token
from gpuplatform.errors import DomainError, NotFound
from gpuplatform.ui.auth import current_user


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100)
    write = forms.BooleanField(required=False, label="Allow writes (write scope)")
    expires_in_days = forms.IntegerField(min_value=1, max_value=366, initial=90, label="Expires in (days)")


@login_required
def token_list(request: HttpRequest) -> HttpResponse:
    user = current_user(request)
    form = TokenForm(request.POST or None)
    shown_once = None
    if request.method == "POST" and form.is_valid():
        scopes = [TokenScope.READ] + ([TokenScope.WRITE] if form.cleaned_data["write"] else [])
        try:
            issued = issue_api_token(
                actor=user,
                name=form.cleaned_data["name"],
                scopes=scopes,
                expires_at=timezone.now() + timedelta(days=form.cleaned_data["expires_in_days"]),
            )
        except DomainError as error:
            form.add_error("name" if error.field == "name" else None, error.message)
        else:
            shown_once = issued.plaintext
            form = TokenForm()
    tokens = ApiToken.objects.visible_to(user).select_related("user")
    page = Paginator(tokens, 25).get_page(request.GET.get("page"))
    return render(request, "accounts/tokens.html", {"form": form, "page": page, "shown_once": shown_once})


@login_required
@require_POST
def token_revoke(request: HttpRequest, token_id: uuid.UUID) -> HttpResponse:
    try:
        token = revoke_api_token(actor=current_user(request), token_id=token_id)
    except NotFound as error:  # another user's token: a 404, as on the API
        raise Http404(error.message) from error
    except DomainError as error:
        messages.error(request, error.message)
    else:
        messages.success(request, f"Revoked {token.name}.")
    return redirect("token-list")
