"""Single sign-on (OpenID Connect, mozilla-django-oidc): identities linked by issuer and subject, and
group claims turned into platform roles and tenant memberships at each login (docs/operations.md)."""
