package awsendpoint

import "strings"

// partition is what the endpoint rules read of an AWS partition: the
// values of the SDK's partitions.json "outputs" (internal/endpoints/
// awsrulesfn, aws-sdk-go-v2 v1.47.5), the regions it names, and its
// regionRegex written as a matcher (regionPrefixes).
type partition struct {
	name               string
	dnsSuffix          string
	dualStackDNSSuffix string
	supportsFIPS       bool
	supportsDualStack  bool
	// regions are the partition's named regions, its "-global" pseudo
	// regions among them (those match no regionRegex).
	regions []string
	// regionPrefixes stand for regionRegex: a region matches when it is
	// one of these prefixes, then "-", then a word ([0-9A-Za-z_]+), then
	// "-", then digits, and nothing else.
	regionPrefixes []string
}

// partitions are in the SDK's order, which decides between two regexes
// that match (none do today) and gives "aws" as the default.
var partitions = []partition{
	{
		name: "aws", dnsSuffix: "amazonaws.com", dualStackDNSSuffix: "api.aws",
		supportsFIPS: true, supportsDualStack: true,
		regions: []string{
			"af-south-1", "ap-east-1", "ap-east-2", "ap-northeast-1", "ap-northeast-2",
			"ap-northeast-3", "ap-south-1", "ap-south-2", "ap-southeast-1", "ap-southeast-2",
			"ap-southeast-3", "ap-southeast-4", "ap-southeast-5", "ap-southeast-6",
			"ap-southeast-7", "aws-global", "ca-central-1", "ca-west-1", "eu-central-1",
			"eu-central-2", "eu-north-1", "eu-south-1", "eu-south-2", "eu-west-1", "eu-west-2",
			"eu-west-3", "il-central-1", "me-central-1", "me-south-1", "mx-central-1",
			"sa-east-1", "us-east-1", "us-east-2", "us-west-1", "us-west-2",
		},
		regionPrefixes: []string{"us", "eu", "ap", "sa", "ca", "me", "af", "il", "mx"},
	},
	{
		name: "aws-cn", dnsSuffix: "amazonaws.com.cn", dualStackDNSSuffix: "api.amazonwebservices.com.cn",
		supportsFIPS: true, supportsDualStack: true,
		regions:        []string{"aws-cn-global", "cn-north-1", "cn-northwest-1"},
		regionPrefixes: []string{"cn"},
	},
	{
		name: "aws-eusc", dnsSuffix: "amazonaws.eu", dualStackDNSSuffix: "api.amazonwebservices.eu",
		supportsFIPS: true, supportsDualStack: true,
		regions:        []string{"eusc-de-east-1"},
		regionPrefixes: []string{"eusc-de"},
	},
	{
		name: "aws-iso", dnsSuffix: "c2s.ic.gov", dualStackDNSSuffix: "api.aws.ic.gov",
		supportsFIPS: true, supportsDualStack: true,
		regions:        []string{"aws-iso-global", "us-iso-east-1", "us-iso-west-1"},
		regionPrefixes: []string{"us-iso"},
	},
	{
		name: "aws-iso-b", dnsSuffix: "sc2s.sgov.gov", dualStackDNSSuffix: "api.aws.scloud",
		supportsFIPS: true, supportsDualStack: true,
		regions:        []string{"aws-iso-b-global", "us-isob-east-1", "us-isob-west-1"},
		regionPrefixes: []string{"us-isob"},
	},
	{
		name: "aws-iso-e", dnsSuffix: "cloud.adc-e.uk", dualStackDNSSuffix: "api.cloud-aws.adc-e.uk",
		supportsFIPS: true, supportsDualStack: true,
		regions:        []string{"aws-iso-e-global", "eu-isoe-west-1"},
		regionPrefixes: []string{"eu-isoe"},
	},
	{
		name: "aws-iso-f", dnsSuffix: "csp.hci.ic.gov", dualStackDNSSuffix: "api.aws.hci.ic.gov",
		supportsFIPS: true, supportsDualStack: true,
		regions:        []string{"aws-iso-f-global", "us-isof-east-1", "us-isof-south-1"},
		regionPrefixes: []string{"us-isof"},
	},
	{
		name: "aws-us-gov", dnsSuffix: "amazonaws.com", dualStackDNSSuffix: "api.aws",
		supportsFIPS: true, supportsDualStack: true,
		regions:        []string{"aws-us-gov-global", "us-gov-east-1", "us-gov-west-1"},
		regionPrefixes: []string{"us-gov"},
	},
}

// partitionOf is the partition of region as the SDK's GetPartition picks
// it: a partition naming the region, else the first whose regionRegex
// matches, else "aws".
func partitionOf(region string) *partition {
	for i := range partitions {
		for _, r := range partitions[i].regions {
			if r == region {
				return &partitions[i]
			}
		}
	}
	for i := range partitions {
		if partitions[i].matches(region) {
			return &partitions[i]
		}
	}
	return &partitions[0]
}

// matches reports whether region matches the partition's regionRegex,
// ^(PREFIX)\-\w+\-\d+$.
func (p *partition) matches(region string) bool {
	for _, prefix := range p.regionPrefixes {
		rest, ok := strings.CutPrefix(region, prefix+"-")
		if !ok {
			continue
		}
		word, digits, ok := strings.Cut(rest, "-")
		if ok && word != "" && digits != "" &&
			strings.IndexFunc(word, notWordChar) < 0 &&
			strings.IndexFunc(digits, notDigit) < 0 {
			return true
		}
	}
	return false
}

func notWordChar(r rune) bool {
	return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_')
}

func notDigit(r rune) bool { return r < '0' || r > '9' }
