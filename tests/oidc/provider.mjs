// A real OpenID Connect provider for the test suite: panva's oidc-provider (OpenID Certified), not a
// stand-in. tests/fixtures/oidc.py starts it with:
//   OIDC_ISSUER       its issuer URL (http://127.0.0.1:<port>)
//   OIDC_CLIENTS      JSON list of client registrations (client_id, client_secret, redirect_uris)
//   OIDC_JWKS         JSON Web Key Set it signs ID tokens with (private keys; the test made them)
//   OIDC_ACCOUNTS     path of a JSON file {account id: claims}, read at every lookup, so a test can
//                     change someone's groups between two logins
// Logging in uses the provider's own development interactions (a login and a consent page).
import { readFileSync } from 'node:fs';
import Provider from 'oidc-provider';

const issuer = process.env.OIDC_ISSUER;
const port = Number(new URL(issuer).port);

const provider = new Provider(issuer, {
  clients: JSON.parse(process.env.OIDC_CLIENTS),
  jwks: JSON.parse(process.env.OIDC_JWKS),
  cookies: { keys: [process.env.OIDC_COOKIE_KEY || 'test-cookie-key'] },
  scopes: ['openid', 'email', 'profile', 'groups'],
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name', 'given_name', 'family_name', 'preferred_username'],
    groups: ['groups'],
  },
  features: { devInteractions: { enabled: true } },
  ttl: { IdToken: 300, AccessToken: 300, Session: 3600, Interaction: 600, Grant: 3600 },
  async findAccount(ctx, id) {
    const accounts = JSON.parse(readFileSync(process.env.OIDC_ACCOUNTS, 'utf8'));
    if (!Object.hasOwn(accounts, id)) return undefined;
    return {
      accountId: id,
      async claims() {
        return { sub: id, ...accounts[id] };
      },
    };
  },
});
provider.proxy = false;

provider.listen(port, () => {
  console.log(`oidc-provider listening at ${issuer}`);
});
