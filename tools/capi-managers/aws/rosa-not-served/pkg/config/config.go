// Package config holds the OCM connection settings the AWS provider fills in.
package config

// Config is an OCM connection's settings.
type Config struct {
	AccessToken  string
	ClientID     string
	ClientSecret string
	URL          string
	UserAgent    string
	Version      string
}
