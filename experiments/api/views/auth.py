"""Tokens for scripts: ``POST /api/v1/auth/token/`` with a username and password."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from experiments.api.schema import ERROR_REF
from experiments.api.throttles import TokenThrottle


class TokenOutputSerializer(serializers.Serializer):
    token = serializers.CharField()


class TokenApi(ObtainAuthToken):
    """Your API token (created on first use). Send it as ``Authorization: Token …``."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    throttle_classes = [TokenThrottle]
    throttle_scope = "token"

    @extend_schema(responses={200: TokenOutputSerializer, 429: ERROR_REF}, auth=[])
    def post(self, request: Request, *args: object, **kwargs: object) -> Response:
        return super().post(request, *args, **kwargs)
