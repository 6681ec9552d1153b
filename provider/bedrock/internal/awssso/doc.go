// Package awssso is AWS IAM Identity Center (SSO) credentials for the
// bedrock provider, as the AWS SDK's credentials/ssocreds does them when
// config.LoadDefaultConfig resolves an SSO profile, without linking the
// SDK's sso and ssooidc service clients: the cached-token file
// (~/.aws/sso/cache/<sha1>.json) that `aws sso login` writes, the bearer
// token provider that refreshes an expired token of an sso-session with
// SSO-OIDC CreateToken and rewrites that file, and the credentials
// provider that exchanges the token for role credentials with SSO
// GetRoleCredentials.
//
// It must not start a login (no device authorization, no client
// registration: only `aws sso login` creates the cache file), must not
// refresh the token of a legacy profile (sso_start_url without
// sso_session), must not decide endpoints, regions or which profile
// applies (the chain, internal/awsconfig, does), and must not put a token,
// client secret or key in an error. It does no caching of its own: the
// chain wraps the credentials in aws.CredentialsCache and the token
// provider in smithy-go's bearer.TokenCache, as the SDK's config does.
package awssso
