"""The cost model page (finance and platform-admins): enter what the cards cost, see the GE-hour
price derived step by step, and create the rate card at it from an effective date."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from gpuplatform.errors import DomainError
from gpuplatform.ui.auth import current_user
from metering.chargeback.cost_model import CostInputs
from metering.forms import CostModelForm
from metering.models import CostModel
from metering.services import cost_models as cost_services
from metering.services.rates import may_price


@login_required
def cost_model(request: HttpRequest) -> HttpResponse:
    user = current_user(request)
    if not may_price(user):
        raise Http404("No such page")
    form = CostModelForm(request.POST or None, user=user)
    preview = None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        inputs = CostInputs(**{name: data[name] for name in CostModelForm.INPUTS})
        try:
            if "create" in request.POST:
                made = cost_services.create_cost_model(
                    actor=user,
                    gpu_model=data["gpu_model"],
                    flavor_id=data["flavor"] or None,
                    currency=data["currency"],
                    inputs=inputs,
                    effective_from=data["effective_from"],
                    effective_to=data["effective_to"],
                )
                messages.success(
                    request, f"Rate card created at {made.price_per_ge_hour} {made.currency}/GE-h."
                )
                return redirect("metering-cost-model")
            preview = cost_services.derivation_of(inputs)
        except DomainError as exc:
            form.add_error(exc.field if exc.field in form.fields else None, exc.message)
    models = [
        (m, cost_services.steps_of(m))
        for m in CostModel.objects.visible_to(user)
        .select_related("rate_card")
        .order_by("gpu_model", "-created_at")[:25]
    ]
    context = {"form": form, "preview": preview, "models": models}
    return render(request, "metering/cost_model.html", context, status=400 if form.errors else 200)
