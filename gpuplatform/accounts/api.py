"""/api/v1/tokens/ (your own tokens) and /api/v1/me/."""

from __future__ import annotations

from typing import Any

import django_filters
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from gpuplatform.accounts.models import ApiToken, TokenScope, User
from gpuplatform.accounts.tokens import issue_api_token, revoke_api_token
from gpuplatform.api.filters import FilterSet
from gpuplatform.api.serializers import StrictModelSerializer, StrictSerializer
from gpuplatform.api.viewsets import ScopedViewSet
from gpuplatform.errors import Forbidden, ValidationFailed


class ApiTokenSerializer(StrictModelSerializer):
    user = serializers.CharField(source="user.username", required=False, max_length=150)
    scopes = serializers.ListField(
        child=serializers.ChoiceField(choices=TokenScope.choices), min_length=1, max_length=2
    )
    state = serializers.CharField(read_only=True)
    name = serializers.CharField(max_length=100)

    class Meta:
        model = ApiToken
        fields = [
            "id",
            "name",
            "user",
            "key_id",
            "scopes",
            "state",
            "created_at",
            "expires_at",
            "last_used_at",
        ]
        read_only_fields = ["id", "key_id", "created_at", "last_used_at"]
        extra_kwargs = {
            "expires_at": {"required": False, "help_text": "Default: API_TOKEN_DEFAULT_DAYS from now."}
        }


class IssuedTokenSerializer(ApiTokenSerializer):
    token = serializers.CharField(
        read_only=True, help_text="Shown once. Send it as 'Authorization: Bearer …'."
    )

    class Meta(ApiTokenSerializer.Meta):
        fields = [*ApiTokenSerializer.Meta.fields, "token"]


class ApiTokenFilter(FilterSet):
    state = django_filters.ChoiceFilter(
        choices=[("active", "active"), ("revoked", "revoked")], method="filter_state"
    )
    name = django_filters.CharFilter(lookup_expr="icontains")

    class Meta:
        model = ApiToken
        fields = ["state", "name"]

    def filter_state(self, queryset: Any, name: str, value: str) -> Any:
        return queryset.usable() if value == "active" else queryset.filter(revoked_at__isnull=False)


class ApiTokenViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    """Your API tokens. The secret is returned once, by create; DELETE revokes."""

    queryset = ApiToken.objects.select_related("user")
    serializer_class = ApiTokenSerializer
    filterset_class = ApiTokenFilter

    @extend_schema(request=ApiTokenSerializer, responses={201: IssuedTokenSerializer})
    def create(self, request: Request) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        owner = None
        if "user" in data:
            # Only a platform-admin may name another user, so only a platform-admin learns whether
            # a username exists; everyone else gets the same refusal either way.
            username = data["user"]["username"]
            if not self.actor.is_platform_admin and username != self.actor.username:
                raise Forbidden("Tokens can only be created for yourself.")
            owner = User.objects.filter(username=username).first()
            if owner is None:
                raise ValidationFailed("No such user.", code="unknown_user", field="user")
        issued = issue_api_token(
            actor=self.actor,
            owner=owner,
            name=data["name"],
            scopes=data["scopes"],
            expires_at=data.get("expires_at"),
            via_token=request.auth if isinstance(request.auth, ApiToken) else None,
        )
        body = dict(IssuedTokenSerializer(issued.token).data)
        body["token"] = issued.plaintext
        return Response(body, status=status.HTTP_201_CREATED)

    @extend_schema(responses={204: None})
    def destroy(self, request: Request, pk: str) -> Response:
        token = self.get_object()
        revoke_api_token(actor=self.actor, token_id=token.pk)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MeMembershipSerializer(serializers.Serializer[Any]):
    tenant = serializers.UUIDField(source="tenant_id")
    tenant_slug = serializers.CharField(source="tenant.slug")
    tenant_display_name = serializers.CharField(source="tenant.display_name")
    role = serializers.CharField()


class MeSerializer(StrictSerializer):
    username = serializers.CharField(read_only=True)
    display_name = serializers.SerializerMethodField()
    email = serializers.EmailField(read_only=True)
    platform_role = serializers.CharField(read_only=True)
    is_service_account = serializers.BooleanField(read_only=True)
    memberships = serializers.SerializerMethodField()
    token = serializers.SerializerMethodField()

    def get_display_name(self, user: User) -> str:
        return user.get_full_name() or user.username

    @extend_schema(responses=MeMembershipSerializer(many=True))
    def get_memberships(self, user: User) -> list[dict[str, Any]]:
        memberships = user.memberships.select_related("tenant").order_by("tenant__path")
        return list(MeMembershipSerializer(memberships, many=True).data)

    @extend_schema(responses=ApiTokenSerializer(allow_null=True))
    def get_token(self, user: User) -> dict[str, Any] | None:
        token = self.context.get("token")
        return dict(ApiTokenSerializer(token).data) if isinstance(token, ApiToken) else None


class MeView(APIView):
    """Who you are: platform role, tenant memberships, and the token you called with."""

    @extend_schema(responses=MeSerializer)
    def get(self, request: Request) -> Response:
        return Response(MeSerializer(request.user, context={"token": request.auth}).data)
