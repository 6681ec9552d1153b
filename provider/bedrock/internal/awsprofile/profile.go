// Package awsprofile reads what the AWS environment variables and the shared
// config and credentials files (~/.aws/config, ~/.aws/credentials) say, for
// bedrock's AWS credential chain: Env is the environment (as the AWS SDK's
// config.NewEnvConfig reads it), Profile a resolved profile with its
// source_profile chain, sso-session and services sections (as
// config.LoadSharedConfigProfile resolves it). It is held to the SDK by
// tests that run both on the same input.
//
// It only reads: it must not fetch credentials, call any AWS service or
// write a file, and must not import the SDK's config package or any service
// client (that is what it exists to avoid linking). Its errors name
// profiles, keys and files, never a key's secret value.
package awsprofile

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
)

// Profile is a resolved shared-config profile: the subset of the SDK's
// config.SharedConfig that the credential chain reads, with the same names,
// types and meaning. A zero field is a key the files do not set.
type Profile struct {
	Profile              string
	Credentials          aws.Credentials
	CredentialSource     string
	CredentialProcess    string
	WebIdentityTokenFile string

	SSOSessionName string
	SSOSession     *SSOSession
	SSORegion      string
	SSOStartURL    string
	SSOAccountID   string
	SSORoleName    string

	RoleARN             string
	ExternalID          string
	MFASerial           string
	RoleSessionName     string
	RoleDurationSeconds *time.Duration

	SourceProfileName string
	Source            *Profile

	Region string

	EC2IMDSEndpointMode imds.EndpointModeState
	EC2IMDSEndpoint     string
	EC2IMDSv1Disabled   *bool

	UseDualStackEndpoint aws.DualStackEndpointState
	UseFIPSEndpoint      aws.FIPSEndpointState

	RetryMaxAttempts int
	RetryMode        aws.RetryMode

	CustomCABundle string

	IgnoreConfiguredEndpoints *bool
	BaseEndpoint              string

	ServicesSectionName string
	Services            Services

	AuthSchemePreference []string

	LoginSession string
}

// SSOSession is an [sso-session NAME] section a profile's sso_session names.
type SSOSession struct {
	Name, SSORegion, SSOStartURL string
}

// Services is the [services NAME] section a profile's services key names:
// per service key ("sts", "sso_oidc"), its sub-properties ("endpoint_url").
// A service key given a plain value instead of sub-properties maps to nil.
type Services struct {
	ServiceValues map[string]map[string]string
}

// EndpointURL returns the endpoint_url the section sets for the service
// with the SDK service ID serviceID ("STS", "SSO OIDC": lower-cased, spaces
// as underscores), and whether it sets one (an empty one counts).
func (s Services) EndpointURL(serviceID string) (string, bool) {
	key := strings.ReplaceAll(strings.ToLower(serviceID), " ", "_")
	u, ok := s.ServiceValues[key]["endpoint_url"]
	return u, ok
}

// ProfileNotExistError is Load's error when the profile asked for is in none
// of the files. Only that profile: a missing source_profile is a
// SourceProfileError. (The SDK's chain ignores this error unless
// AWS_PROFILE, not AWS_DEFAULT_PROFILE, is set.)
type ProfileNotExistError struct {
	Profile string
	Files   []string // the config and credentials files read
}

// Error names the profile and the files looked in.
func (e *ProfileNotExistError) Error() string {
	return fmt.Sprintf("AWS profile %q not found in %s", e.Profile, strings.Join(e.Files, ", "))
}

// SourceProfileError is Load's error when a profile's source_profile is
// missing or has no credentials to assume RoleARN with.
type SourceProfileError struct {
	Profile string // the source profile
	RoleARN string // the role its user would assume
	Reason  string
}

// Error names the source profile, the role and what is wrong.
func (e *SourceProfileError) Error() string {
	return fmt.Sprintf("AWS source profile %q (to assume role %q): %s", e.Profile, e.RoleARN, e.Reason)
}

// Load resolves profile from the config files and credentials files (each
// nil or empty = the default ~/.aws/config or ~/.aws/credentials; the
// caller passes AWS_CONFIG_FILE / AWS_SHARED_CREDENTIALS_FILE when set) as
// the SDK's config.LoadSharedConfigProfile does: files that cannot be
// opened are empty; in a config file profiles are [profile NAME] or
// [default] ([profile default] replacing [default]), in a credentials file
// [NAME]; the credentials files override the config files key by key for
// the keys the SDK merges; source_profile is followed (a profile met again
// keeps only its keys), and sso_session and services are linked. It fails
// where the SDK fails: a profile in none of the files is a
// *ProfileNotExistError, a missing or credential-less source_profile a
// *SourceProfileError; partial keys, a bad setting, a missing sso-session,
// a file path that opens but cannot be read are errors naming the profile
// or file.
func Load(profile string, configFiles, credentialsFiles []string) (Profile, error) {
	if len(configFiles) == 0 {
		configFiles = []string{filepath.Join(HomeDir(), ".aws", "config")}
	}
	if len(credentialsFiles) == 0 {
		credentialsFiles = []string{filepath.Join(HomeDir(), ".aws", "credentials")}
	}
	conf, err := readIniFiles(configFiles)
	if err != nil {
		return Profile{}, err
	}
	if err := renameConfigSections(conf); err != nil {
		return Profile{}, err
	}
	creds, err := readIniFiles(credentialsFiles)
	if err != nil {
		return Profile{}, err
	}
	for _, name := range creds.names() {
		if strings.HasPrefix(name, "profile ") {
			delete(creds, name) // not a credentials-file profile
		}
	}
	mergeSections(conf, creds)
	var p Profile
	if err := p.resolve(map[string]bool{}, profile, conf); err != nil {
		var nf *ProfileNotExistError
		if errors.As(err, &nf) {
			nf.Files = append(append([]string(nil), configFiles...), credentialsFiles...)
		}
		return Profile{}, err
	}
	return p, nil
}

// HomeDir is the home directory as the SDK's shared config finds it:
// $HOME (os.UserHomeDir), else the current user's entry in the user
// database; "" when neither says. The shared files, the SSO token cache
// and the login cache are found under it. It reads no file of its own.
func HomeDir() string {
	if h, _ := os.UserHomeDir(); h != "" {
		return h
	}
	if u, _ := user.Current(); u != nil {
		return u.HomeDir
	}
	return ""
}

func readIniFiles(paths []string) (iniSections, error) {
	all := iniSections{}
	for _, path := range paths {
		ss, ok, err := readIniFile(path)
		if err != nil {
			return nil, err
		}
		if ok {
			mergeSections(all, ss)
		}
	}
	return all, nil
}

// renameConfigSections makes a config file's [profile NAME] the profile
// NAME, replacing a bare [NAME]; it keeps [default] (any case),
// [sso-session NAME] and [services NAME], and drops every other bare
// section. Sorted order, as the SDK, decides odd collisions.
func renameConfigSections(ss iniSections) error {
	renamed := map[string]bool{}
	for _, name := range ss.names() {
		if renamed[name] {
			continue
		}
		switch {
		case strings.HasPrefix(name, "profile "):
			sec := ss[name]
			if sec == nil {
				return fmt.Errorf("rename config file section %q: section gone", name)
			}
			delete(ss, name)
			sec.name = strings.TrimPrefix(name, "profile ")
			ss[sec.name] = sec
			renamed[sec.name] = true
		case strings.HasPrefix(name, "sso-session "), strings.HasPrefix(name, "services "),
			strings.EqualFold(name, "default"):
		default:
			delete(ss, name)
		}
	}
	return nil
}

// mergedKeys are the keys a later file's section overrides in an earlier
// file's section of the same name (besides the access key pair and its
// session token, which go together). Others stay the earlier file's.
var mergedKeys = []string{
	"role_arn", "source_profile", "credential_source", "external_id", "mfa_serial",
	"role_session_name", "region", "endpoint_discovery_enabled", "credential_process",
	"web_identity_token_file", "s3_use_arn_region", "s3_disable_multiregion_access_points",
	"ec2_metadata_service_endpoint_mode", "ec2_metadata_service_endpoint",
	"ec2_metadata_v1_disabled", "use_dualstack_endpoint", "use_fips_endpoint",
	"defaults_mode", "retry_mode", "ca_bundle", "duration_seconds", "max_attempts",
	"sso_session", "sso_account_id", "sso_region", "sso_role_name", "sso_start_url",
	"auth_scheme_preference", "login_session",
}

const (
	keyAccessKeyID     = "aws_access_key_id"
	keySecretAccessKey = "aws_secret_access_key"
	keySessionToken    = "aws_session_token"
)

// mergeSections merges src's sections into dst's: new sections whole,
// existing ones key by key (mergedKeys). A section with one of the access
// key pair without the other gets an error, and the later file's errors
// replace the earlier's.
func mergeSections(dst, src iniSections) {
	for _, name := range src.names() {
		s := src[name]
		if s.has(keyAccessKeyID) != s.has(keySecretAccessKey) {
			s.errs = append(s.errs, fmt.Errorf("partial credentials found for profile %s", name))
		}
		d := dst[name]
		if d == nil {
			dst[name] = s
			continue
		}
		d.errs = s.errs
		if s.has(keyAccessKeyID) && s.has(keySecretAccessKey) {
			copyKey(d, s, keyAccessKeyID)
			copyKey(d, s, keySecretAccessKey)
			copyKey(d, s, keySessionToken)
		}
		for _, k := range mergedKeys {
			copyKey(d, s, k)
		}
	}
}

// copyKey sets d's key to s's string value, if s has the key.
func copyKey(d, s *iniSection, key string) {
	if !s.has(key) {
		return
	}
	d.values[key] = iniValue{str: s.str(key)}
	d.files[key] = s.files[key]
}

// resolve fills p from the section name of ss and, through source_profile,
// its sources; seen holds the profiles already met on the way.
func (p *Profile) resolve(seen map[string]bool, name string, ss iniSections) error {
	p.Profile = name
	sec := ss[name]
	if sec == nil {
		return &ProfileNotExistError{Profile: name}
	}
	if err := p.readSection(sec); err != nil {
		return fmt.Errorf("AWS profile %q: %w", name, err)
	}
	if seen[name] {
		p.clearAssumeRoleOptions() // met again: only its own keys count
	} else if err := p.validateRequiresRoleARN(); err != nil {
		return err
	}
	if len(seen) != 0 && p.Credentials.HasKeys() {
		return nil // a source with keys ends the chain
	}
	seen[name] = true
	if err := p.validateOneCredentialType(); err != nil {
		return err
	}
	if p.SourceProfileName != "" {
		p.clearCredentialOptions()
		src := &Profile{}
		if err := src.resolve(seen, p.SourceProfileName, ss); err != nil {
			if _, missing := err.(*ProfileNotExistError); missing {
				return &SourceProfileError{Profile: p.SourceProfileName, RoleARN: p.RoleARN, Reason: "profile not found"}
			}
			return err
		}
		if !src.hasCredentials() {
			return &SourceProfileError{Profile: p.SourceProfileName, RoleARN: p.RoleARN, Reason: "profile has no credentials"}
		}
		p.Source = src
	}
	if p.SSOSessionName != "" {
		s := ss["sso-session "+strings.TrimSpace(p.SSOSessionName)]
		if s == nil {
			return fmt.Errorf("AWS profile %q: sso-session %q not found", name, p.SSOSessionName)
		}
		p.SSOSession = &SSOSession{Name: p.SSOSessionName, SSORegion: s.str("sso_region"), SSOStartURL: s.str("sso_start_url")}
	}
	if p.ServicesSectionName != "" {
		if s := ss["services "+p.ServicesSectionName]; s != nil {
			p.Services.ServiceValues = make(map[string]map[string]string, len(s.values))
			for k, v := range s.values {
				p.Services.ServiceValues[k] = v.sub
			}
		}
	}
	return nil
}

// readSection sets p from the keys of sec, failing where the SDK fails: a
// section without a name, partial credentials, or a bad value of a key the
// SDK checks (including keys Profile does not keep).
func (p *Profile) readSection(sec *iniSection) error {
	if sec.name == "" {
		return errors.New("section with no name")
	}
	if len(sec.errs) != 0 {
		return sec.errs[len(sec.errs)-1]
	}
	str := func(dst *string, key string) {
		if sec.has(key) {
			*dst = sec.str(key)
		}
	}
	str(&p.RoleARN, "role_arn")
	str(&p.ExternalID, "external_id")
	str(&p.MFASerial, "mfa_serial")
	str(&p.RoleSessionName, "role_session_name")
	str(&p.SourceProfileName, "source_profile")
	str(&p.CredentialSource, "credential_source")
	str(&p.Region, "region")
	str(&p.SSOSessionName, "sso_session")
	str(&p.SSORegion, "sso_region")
	str(&p.SSOStartURL, "sso_start_url")
	str(&p.SSOAccountID, "sso_account_id")
	str(&p.SSORoleName, "sso_role_name")
	if sec.has("duration_seconds") {
		n, err := strconv.ParseInt(sec.str("duration_seconds"), 0, 64)
		if err != nil {
			n = 0 // as the SDK: a bad duration is 0, not an error
		}
		d := time.Duration(n) * time.Second
		p.RoleDurationSeconds = &d
	}
	str(&p.CredentialProcess, "credential_process")
	str(&p.WebIdentityTokenFile, "web_identity_token_file")
	if sec.has("ec2_metadata_service_endpoint_mode") {
		if err := p.EC2IMDSEndpointMode.SetFromString(sec.str("ec2_metadata_service_endpoint_mode")); err != nil {
			return fmt.Errorf("ec2_metadata_service_endpoint_mode: %w", err)
		}
	}
	str(&p.EC2IMDSEndpoint, "ec2_metadata_service_endpoint")
	if sec.has("ec2_metadata_v1_disabled") {
		b := strings.EqualFold(sec.str("ec2_metadata_v1_disabled"), "true")
		p.EC2IMDSv1Disabled = &b
	}
	if sec.has("use_dualstack_endpoint") {
		p.UseDualStackEndpoint = aws.DualStackEndpointStateDisabled
		if strings.EqualFold(sec.str("use_dualstack_endpoint"), "true") {
			p.UseDualStackEndpoint = aws.DualStackEndpointStateEnabled
		}
	}
	if sec.has("use_fips_endpoint") {
		p.UseFIPSEndpoint = aws.FIPSEndpointStateDisabled
		if strings.EqualFold(sec.str("use_fips_endpoint"), "true") {
			p.UseFIPSEndpoint = aws.FIPSEndpointStateEnabled
		}
	}
	if sec.has("max_attempts") {
		n, err := strconv.ParseInt(sec.str("max_attempts"), 0, 64)
		if err != nil {
			return fmt.Errorf("max_attempts %q is not an integer: %w", sec.str("max_attempts"), err)
		}
		p.RetryMaxAttempts = int(n)
	}
	if sec.has("retry_mode") {
		m, err := aws.ParseRetryMode(sec.str("retry_mode"))
		if err != nil {
			return fmt.Errorf("retry_mode: %w", err)
		}
		p.RetryMode = m
	}
	str(&p.CustomCABundle, "ca_bundle")
	if sec.has("ignore_configured_endpoint_urls") {
		b := strings.EqualFold(sec.str("ignore_configured_endpoint_urls"), "true")
		p.IgnoreConfiguredEndpoints = &b
	}
	str(&p.BaseEndpoint, "endpoint_url")
	if err := checkUnkeptKeys(sec); err != nil {
		return err
	}
	creds := aws.Credentials{
		AccessKeyID:     sec.str(keyAccessKeyID),
		SecretAccessKey: sec.str(keySecretAccessKey),
		SessionToken:    sec.str(keySessionToken),
		Source:          "SharedConfigCredentials: " + sec.files[keyAccessKeyID],
		AccountID:       sec.str("aws_account_id"),
	}
	if creds.HasKeys() {
		p.Credentials = creds
	}
	str(&p.ServicesSectionName, "services")
	p.AuthSchemePreference = authSchemeList(sec.str("auth_scheme_preference"))
	str(&p.LoginSession, "login_session")
	return nil
}

// checkUnkeptKeys fails where the SDK fails on a key Profile does not keep,
// so that a file the SDK refuses is refused here too.
func checkUnkeptKeys(sec *iniSection) error {
	oneOf := func(key string, fold bool, allowed ...string) error {
		if !sec.has(key) {
			return nil
		}
		v := sec.str(key)
		if fold {
			v = strings.ToLower(v)
		}
		for _, a := range allowed {
			if v == a {
				return nil
			}
		}
		return fmt.Errorf("%s %q is not one of %s", key, sec.str(key), strings.Join(allowed, ", "))
	}
	if sec.has("defaults_mode") {
		var m aws.DefaultsMode
		if !m.SetFromString(sec.str("defaults_mode")) {
			return fmt.Errorf("defaults_mode %q is not a defaults mode", sec.str("defaults_mode"))
		}
	}
	if err := oneOf("disable_request_compression", false, "true", "false"); err != nil {
		return err
	}
	if err := oneOf("disable_clock_skew_correction", false, "true", "false"); err != nil {
		return err
	}
	if sec.has("request_min_compression_size_bytes") {
		v := sec.str("request_min_compression_size_bytes")
		n, err := strconv.ParseInt(v, 0, 64)
		if err != nil || n < 0 || n > 10485760 {
			return fmt.Errorf("request_min_compression_size_bytes %q is not an integer in [0, 10485760]", v)
		}
	}
	if err := oneOf("account_id_endpoint_mode", false, "preferred", "required", "disabled"); err != nil {
		return err
	}
	if err := oneOf("request_checksum_calculation", true, "when_supported", "when_required"); err != nil {
		return err
	}
	return oneOf("response_checksum_validation", true, "when_supported", "when_required")
}

// authSchemeList splits an auth scheme preference ("sigv4, httpBearerAuth")
// into its trimmed, non-empty names; nil for none.
func authSchemeList(s string) []string {
	if s == "" {
		return nil
	}
	var ids []string
	for _, part := range strings.Split(s, ",") {
		if id := strings.TrimSpace(part); id != "" {
			ids = append(ids, id)
		}
	}
	if ids == nil {
		ids = []string{}
	}
	return ids
}

// validateRequiresRoleARN: source_profile, credential_source and
// web_identity_token_file each need role_arn.
func (p *Profile) validateRequiresRoleARN() error {
	var key string
	switch {
	case p.SourceProfileName != "":
		key = "source_profile"
	case p.CredentialSource != "":
		key = "credential_source"
	case p.WebIdentityTokenFile != "":
		key = "web_identity_token_file"
	}
	if key != "" && p.RoleARN == "" {
		return fmt.Errorf("AWS profile %q: %s requires role_arn", p.Profile, key)
	}
	return nil
}

// validateOneCredentialType: at most one of source_profile,
// credential_source, credential_process, web_identity_token_file.
func (p *Profile) validateOneCredentialType() error {
	n := 0
	for _, set := range []bool{p.SourceProfileName != "", p.CredentialSource != "", p.CredentialProcess != "", p.WebIdentityTokenFile != ""} {
		if set {
			n++
		}
	}
	if n > 1 {
		return fmt.Errorf("AWS profile %q: only one of source_profile, credential_source, credential_process, web_identity_token_file may be set", p.Profile)
	}
	return nil
}

// HasSSOConfiguration reports whether the profile asks for SSO credentials,
// through an sso-session or the legacy keys.
func (p Profile) HasSSOConfiguration() bool {
	return p.SSOSessionName != "" || p.HasLegacySSOConfiguration()
}

// HasLegacySSOConfiguration reports whether the profile sets any of the
// legacy SSO keys: sso_region, sso_account_id, sso_start_url, sso_role_name.
func (p Profile) HasLegacySSOConfiguration() bool {
	return p.SSORegion != "" || p.SSOAccountID != "" || p.SSOStartURL != "" || p.SSORoleName != ""
}

// ValidateSSOConfiguration fails, as the SDK's chain does before using SSO,
// when an sso-session profile lacks its session, region or start URL or
// disagrees with its session's, or a legacy profile lacks one of its four
// keys. The chain calls it; Load does not.
func (p Profile) ValidateSSOConfiguration() error {
	var missing []string
	if p.SSOSessionName != "" {
		if p.SSOSession == nil {
			missing = append(missing, "sso-session")
		} else {
			if p.SSOSession.SSORegion == "" {
				missing = append(missing, "sso_region")
			}
			if p.SSOSession.SSOStartURL == "" {
				missing = append(missing, "sso_start_url")
			}
		}
	} else if p.HasLegacySSOConfiguration() {
		for _, kv := range [][2]string{{"sso_region", p.SSORegion}, {"sso_start_url", p.SSOStartURL},
			{"sso_account_id", p.SSOAccountID}, {"sso_role_name", p.SSORoleName}} {
			if kv[1] == "" {
				missing = append(missing, kv[0])
			}
		}
	} else {
		return nil
	}
	if len(missing) > 0 {
		return fmt.Errorf("AWS profile %q is configured to use SSO but is missing %s", p.Profile, strings.Join(missing, ", "))
	}
	if p.SSOSession == nil {
		return nil
	}
	if p.SSORegion != "" && p.SSORegion != p.SSOSession.SSORegion {
		return fmt.Errorf("AWS profile %q: sso_region must match the sso-session's", p.Profile)
	}
	if p.SSOStartURL != "" && p.SSOStartURL != p.SSOSession.SSOStartURL {
		return fmt.Errorf("AWS profile %q: sso_start_url must match the sso-session's", p.Profile)
	}
	return nil
}

// hasCredentials reports whether a source profile can give credentials.
func (p *Profile) hasCredentials() bool {
	return p.SourceProfileName != "" || p.CredentialSource != "" || p.CredentialProcess != "" ||
		p.WebIdentityTokenFile != "" || p.HasSSOConfiguration() || p.Credentials.HasKeys()
}

func (p *Profile) clearAssumeRoleOptions() {
	p.RoleARN, p.ExternalID, p.MFASerial, p.RoleSessionName, p.SourceProfileName = "", "", "", "", ""
}

// clearCredentialOptions drops what a profile with a source_profile would
// otherwise use itself (not sso_session nor login_session, as the SDK).
func (p *Profile) clearCredentialOptions() {
	p.CredentialSource, p.CredentialProcess, p.WebIdentityTokenFile = "", "", ""
	p.Credentials = aws.Credentials{}
	p.SSOAccountID, p.SSORegion, p.SSORoleName, p.SSOStartURL = "", "", "", ""
}
