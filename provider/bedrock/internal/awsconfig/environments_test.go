package awsconfig

// keysSrc is a profile "src" with static keys, a role's usual source.
const keysSrc = "[profile src]\naws_access_key_id = AKSRC\naws_secret_access_key = s\n"

// sessCorp is the SSO session "corp".
const sessCorp = "[sso-session corp]\nsso_start_url = https://start\nsso_region = us-east-1\n"

// moreEnvironments are the ones a review added (2026-12-07): roles sourced
// from every kind of profile, retries counted, FIPS and dual-stack with a
// configured endpoint, the general endpoint hiding the services section,
// errors of a source profile or variable, odd regions; endpoints with a
// query, or that cannot be resolved while a cache needs no call.
var moreEnvironments = []environment{
	{name: "source is a login session", files: map[string]string{".aws/config": "[profile l]\nlogin_session = me\n[profile r]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = l\n"}, env: map[string]string{"AWS_PROFILE": "r", "AWS_REGION": "us-east-1"}},
	{name: "source has credential_process", files: map[string]string{"creds.sh": `echo '{"Version":1,"AccessKeyId":"AKPROC","SecretAccessKey":"s","SessionToken":"t","Expiration":"2099-01-02T03:04:05Z"}'`,
		".aws/config": "[profile p]\ncredential_process = /bin/sh {{DIR}}/creds.sh\n[profile r]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = p\n"}, env: map[string]string{"AWS_PROFILE": "r", "AWS_REGION": "us-east-1"}},
	{name: "credential_process with role_arn", files: map[string]string{"creds.sh": `echo '{"Version":1,"AccessKeyId":"AKPROC","SecretAccessKey":"s","SessionToken":"t","Expiration":"2099-01-02T03:04:05Z"}'`,
		".aws/config": "[profile r]\ncredential_process = /bin/sh {{DIR}}/creds.sh\nrole_arn = arn:aws:iam::1:role/r\n"}, env: map[string]string{"AWS_PROFILE": "r", "AWS_REGION": "us-east-1"}},
	{name: "web identity source then role", files: map[string]string{"token": "jwt3", ".aws/config": "[profile w]\nrole_arn = arn:aws:iam::1:role/w\nweb_identity_token_file = {{DIR}}/token\n[profile r]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = w\nrole_session_name = rs\n"}, env: map[string]string{"AWS_PROFILE": "r", "AWS_REGION": "us-west-2"}},
	{name: "sso session mismatching start url", files: map[string]string{ssoCache("corp"): validToken, ".aws/config": "[profile s]\nsso_session = corp\nsso_start_url = https://other\nsso_account_id = 111\nsso_role_name = Dev\n" + sessCorp}, env: map[string]string{"AWS_PROFILE": "s", "AWS_REGION": "us-east-1"}},
	{name: "legacy sso missing role", files: map[string]string{".aws/config": "[profile s]\nsso_start_url = https://start\nsso_region = us-east-1\nsso_account_id = 111\n"}, env: map[string]string{"AWS_PROFILE": "s"}},
	{name: "sso session and keys", files: map[string]string{ssoCache("corp"): validToken, ".aws/config": "[profile s]\nsso_session = corp\naws_access_key_id = AKS\naws_secret_access_key = s\n" + sessCorp}, env: map[string]string{"AWS_PROFILE": "s", "AWS_REGION": "us-east-1"}},
	{name: "sso role then assumed role", files: map[string]string{ssoCache("corp"): validToken, ".aws/config": "[profile s]\nsso_session = corp\nsso_account_id = 111\nsso_role_name = Dev\n" + sessCorp + "[profile r]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = s\n"}, env: map[string]string{"AWS_PROFILE": "r", "AWS_REGION": "eu-west-1"}},
	{name: "bad key in source profile", files: map[string]string{".aws/config": "[profile src]\naws_access_key_id = AKSRC\naws_secret_access_key = s\nmax_attempts = abc\n[profile r]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = src\n"}, env: map[string]string{"AWS_PROFILE": "r", "AWS_REGION": "us-east-1"}},
	{name: "STS throttled AWS_MAX_ATTEMPTS=2", stsError: "Throttling", files: map[string]string{".aws/config": keysSrc + "[profile r]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = src\n"}, env: map[string]string{"AWS_PROFILE": "r", "AWS_REGION": "us-east-1", "AWS_MAX_ATTEMPTS": "2"}},
	{name: "STS throttled profile max_attempts=1", stsError: "Throttling", files: map[string]string{".aws/config": keysSrc + "[profile r]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = src\nmax_attempts = 1\n"}, env: map[string]string{"AWS_PROFILE": "r", "AWS_REGION": "us-east-1"}},
	{name: "env web identity wins over profile keys", files: map[string]string{"token": "jwt", ".aws/config": "[profile k]\naws_access_key_id = AKK\naws_secret_access_key = s\n"}, env: map[string]string{"AWS_PROFILE": "k", "AWS_REGION": "us-east-1", "AWS_WEB_IDENTITY_TOKEN_FILE": "{{DIR}}/token", "AWS_ROLE_ARN": "arn:aws:iam::1:role/w"}},
	{name: "login session with role_arn", files: map[string]string{loginCache("me"): "testdata/login-valid.json", ".aws/config": "[profile l]\nlogin_session = me\nrole_arn = arn:aws:iam::1:role/r\nregion = us-east-1\n"}, env: map[string]string{"AWS_PROFILE": "l"}},
	{name: "IMDS endpoint from the profile", files: map[string]string{".aws/config": "[default]\nec2_metadata_service_endpoint = {{URL}}\n"}, env: map[string]string{"AWS_REGION": "us-east-1", "AWS_EC2_METADATA_SERVICE_ENDPOINT": ""}},
	{name: "IMDS disabled with Ec2InstanceMetadata source", files: map[string]string{".aws/config": "[profile e]\nrole_arn = arn:aws:iam::1:role/e\ncredential_source = Ec2InstanceMetadata\n"}, env: map[string]string{"AWS_PROFILE": "e", "AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}},
	{name: "sso session refresh without any region", files: map[string]string{ssoCache("corp"): refreshable, ".aws/config": "[profile s]\nsso_session = corp\nsso_account_id = 111\nsso_role_name = Dev\n" + sessCorp}, env: map[string]string{"AWS_PROFILE": "s"}},
	{name: "role without any region", files: map[string]string{".aws/config": keysSrc + "[profile r]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = src\n"}, env: map[string]string{"AWS_PROFILE": "r"}},
	{name: "container via localhost name", env: map[string]string{"AWS_CONTAINER_CREDENTIALS_FULL_URI": "{{URL}}/container", "AWS_CONTAINER_AUTHORIZATION_TOKEN": "ctok"}},
	{name: "auth pref env only commas", files: map[string]string{".aws/config": "[default]\nauth_scheme_preference = httpBearerAuth\naws_access_key_id = AK\naws_secret_access_key = s\n"}, env: map[string]string{"AWS_AUTH_SCHEME_PREFERENCE": " , "}},
	{name: "bad AWS_RESTRICT_FILE_PERMISSIONS", env: map[string]string{"AWS_RESTRICT_FILE_PERMISSIONS": "nope", "AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "s"}},
	{name: "AWS_PROFILE exists only as [profile x] in credentials", files: map[string]string{".aws/credentials": "[profile x]\naws_access_key_id = AK\naws_secret_access_key = s\n"}, env: map[string]string{"AWS_PROFILE": "x"}},
	{name: "ca_bundle in the profile missing", files: map[string]string{".aws/config": "[default]\nca_bundle = {{DIR}}/nope.pem\naws_access_key_id = AK\naws_secret_access_key = s\n"}},
	{name: "region with space", files: map[string]string{".aws/config": keysSrc + "[profile r]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = src\n"}, env: map[string]string{"AWS_PROFILE": "r", "AWS_REGION": "us east 1"}},
	{name: "FIPS with custom STS endpoint", files: map[string]string{".aws/config": keysSrc + "[profile r]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = src\n"}, env: map[string]string{"AWS_PROFILE": "r", "AWS_REGION": "us-east-1", "AWS_USE_FIPS_ENDPOINT": "true"}},
	{name: "dualstack with custom STS endpoint", files: map[string]string{".aws/config": keysSrc + "[profile r]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = src\nuse_dualstack_endpoint = true\n"}, env: map[string]string{"AWS_PROFILE": "r", "AWS_REGION": "us-east-1"}},
	{name: "FIPS with custom SSO endpoint", files: map[string]string{ssoCache("corp"): refreshable, ".aws/config": "[profile s]\nsso_session = corp\nsso_account_id = 111\nsso_role_name = Dev\nuse_fips_endpoint = true\n" + sessCorp}, env: map[string]string{"AWS_PROFILE": "s", "AWS_REGION": "us-east-1"}},
	{name: "aws-global region", files: map[string]string{".aws/config": keysSrc + "[profile r]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = src\n"}, env: map[string]string{"AWS_PROFILE": "r", "AWS_REGION": "aws-global"}},
	{name: "general endpoint hides services", files: map[string]string{".aws/config": keysSrc + "[profile r]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = src\nservices = m\n[services m]\nsts =\n  endpoint_url = {{URL}}\n"}, env: map[string]string{"AWS_MAX_ATTEMPTS": "1", "AWS_PROFILE": "r", "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": "{{URL}}", "AWS_ENDPOINT_URL_STS": ""}},
	{name: "ignore configured endpoints in profile", files: map[string]string{".aws/config": keysSrc + "[profile r]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = src\nignore_configured_endpoint_urls = true\n"}, env: map[string]string{"AWS_MAX_ATTEMPTS": "1", "AWS_PROFILE": "r", "AWS_REGION": "us-east-1"}},
	{name: "empty services endpoint_url", files: map[string]string{".aws/config": keysSrc + "[profile r]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = src\nservices = m\n[services m]\nsts =\n  endpoint_url =\n"}, env: map[string]string{"AWS_MAX_ATTEMPTS": "1", "AWS_PROFILE": "r", "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL_STS": ""}},
	{name: "a legacy SSO profile at an endpoint with a query", files: map[string]string{ssoCache("https://start"): validToken,
		".aws/config": "[profile s]\nsso_start_url = https://start\nsso_region = us-east-1\nsso_account_id = 111\nsso_role_name = Dev\nregion = eu-west-1\n"},
		env: map[string]string{"AWS_PROFILE": "s", "AWS_ENDPOINT_URL_SSO": "{{URL}}?tenant=a"}},
	{name: "an SSO session refreshed at an OIDC endpoint with a query", files: map[string]string{ssoCache("corp"): refreshable,
		".aws/config": "[profile s]\nsso_session = corp\nsso_account_id = 111\nsso_role_name = Dev\n[sso-session corp]\nsso_start_url = https://start\nsso_region = us-east-1\n"},
		env: map[string]string{"AWS_PROFILE": "s", "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL_SSO_OIDC": "{{URL}}/?tenant=a"}},
	{name: "an SSO session's valid token and no region", files: map[string]string{ssoCache("corp"): validToken,
		".aws/config": "[profile s]\nsso_session = corp\nsso_account_id = 111\nsso_role_name = Dev\n[sso-session corp]\nsso_start_url = https://start\nsso_region = us-east-1\n"},
		env: map[string]string{"AWS_PROFILE": "s", "AWS_ENDPOINT_URL_SSO_OIDC": ""}},
	{name: "an SSO session's valid token and an OIDC endpoint that is no URL", files: map[string]string{ssoCache("corp"): validToken,
		".aws/config": "[profile s]\nsso_session = corp\nsso_account_id = 111\nsso_role_name = Dev\n[sso-session corp]\nsso_start_url = https://start\nsso_region = us-east-1\n"},
		env: map[string]string{"AWS_PROFILE": "s", "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL_SSO_OIDC": "http://a b"}},
	{name: "aws login's valid credentials and a sign-in endpoint that is no URL", files: map[string]string{loginCache("arn:aws:iam::123456789012:user/me"): "testdata/login-valid.json",
		".aws/config": "[profile l]\nlogin_session = arn:aws:iam::123456789012:user/me\nregion = us-east-1\n"},
		env: map[string]string{"AWS_PROFILE": "l", "AWS_ENDPOINT_URL_SIGNIN": "http://a b"}},
	{name: "aws login's valid credentials, FIPS and a configured sign-in endpoint", files: map[string]string{loginCache("arn:aws:iam::123456789012:user/me"): "testdata/login-valid.json",
		".aws/config": "[profile l]\nlogin_session = arn:aws:iam::123456789012:user/me\nregion = us-east-1\n"},
		env: map[string]string{"AWS_PROFILE": "l", "AWS_USE_FIPS_ENDPOINT": "true"}},
	{name: "a chain of two roles with STS throttling every call", stsError: "Throttling", files: map[string]string{".aws/config": "[profile a]\naws_access_key_id = AKA\naws_secret_access_key = s\n[profile b]\nrole_arn = arn:aws:iam::1:role/b\nsource_profile = a\n[profile c]\nrole_arn = arn:aws:iam::1:role/c\nsource_profile = b\n"},
		env: map[string]string{"AWS_PROFILE": "c", "AWS_REGION": "us-east-1", "AWS_MAX_ATTEMPTS": "2"}},
	{name: "a legacy SSO profile with AWS_ENDPOINT_URL_SSO holding a query", files: map[string]string{ssoCache("https://start"): validToken,
		".aws/config": "[profile s]\nsso_start_url = https://start\nsso_region = us-east-1\nsso_account_id = 111\nsso_role_name = Dev\nregion = eu-west-1\n"},
		env: map[string]string{"AWS_PROFILE": "s", "AWS_ENDPOINT_URL_SSO": "{{URL}}/?x=1"}},
}
