package security

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// ParseProperties reads a Kafka client properties file, as Kafka's tools
// take with --command-config (Java names) or librdkafka's (kcat -F), and
// maps what gregor's clients can act on: security.protocol, sasl.mechanism,
// the credentials (sasl.jaas.config's PlainLoginModule or ScramLoginModule
// username and password, or librdkafka's sasl.username / sasl.password),
// and PEM files (ssl.truststore.location with ssl.truststore.type=PEM, or
// ssl.ca.location; ssl.keystore.location with ssl.keystore.type=PEM, or
// ssl.certificate.location and ssl.key.location). Any other ssl.* or sasl.*
// setting is refused, naming the ones understood; settings of neither kind
// (client.id, ...) are left to the client. Load still has to be called.
func ParseProperties(path string) (Config, error) {
	props, err := readProperties(path)
	if err != nil {
		return Config{}, err
	}
	var c Config
	refuse := func(k, why string) error { return fmt.Errorf("--client-properties %s: %s: %s", path, k, why) }
	for k, v := range props {
		switch k {
		case "security.protocol":
			c.Protocol = v
		case "sasl.mechanism", "sasl.mechanisms":
			c.Mechanism = v
		case "sasl.username":
			c.User = v
		case "sasl.password":
			c.password = v
		case "sasl.jaas.config":
			u, p, err := parseJAAS(v)
			if err != nil {
				return Config{}, refuse(k, err.Error())
			}
			c.User, c.password = u, p
		case "ssl.truststore.location", "ssl.ca.location":
			c.CAFile = v
		case "ssl.keystore.location":
			c.CertFile, c.KeyFile = v, v
		case "ssl.certificate.location":
			c.CertFile = v
		case "ssl.key.location":
			c.KeyFile = v
		case "ssl.truststore.type", "ssl.keystore.type":
			if !strings.EqualFold(v, "PEM") {
				return Config{}, refuse(k, fmt.Sprintf("%q: only PEM files are read; convert the store (keytool -exportcert -rfc, openssl pkcs12) and set %s=PEM", v, k))
			}
		case "ssl.endpoint.identification.algorithm", "ssl.enabled.protocols", "ssl.protocol":
			// Hostname verification is always on and TLS 1.2+ always used.
		default:
			if strings.HasPrefix(k, "ssl.") || strings.HasPrefix(k, "sasl.") {
				return Config{}, refuse(k, "not understood; gregor reads security.protocol, sasl.mechanism, sasl.jaas.config (or sasl.username and sasl.password), ssl.truststore.location (or ssl.ca.location), ssl.keystore.location (or ssl.certificate.location and ssl.key.location), as PEM")
			}
		}
	}
	if props["ssl.truststore.location"] != "" && !strings.EqualFold(props["ssl.truststore.type"], "PEM") {
		return Config{}, refuse("ssl.truststore.location", "a Java truststore is JKS unless ssl.truststore.type=PEM: give a PEM file and set ssl.truststore.type=PEM")
	}
	if props["ssl.keystore.location"] != "" && !strings.EqualFold(props["ssl.keystore.type"], "PEM") {
		return Config{}, refuse("ssl.keystore.location", "a Java keystore is JKS unless ssl.keystore.type=PEM: give a PEM file (certificate and key) and set ssl.keystore.type=PEM")
	}
	return c, nil
}

// readProperties reads key=value (or key: value) lines, # and ! comments,
// as java.util.Properties does for the files Kafka's tools are given
// (line continuations and escapes are not read).
func readProperties(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--client-properties: %w", err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		i := strings.IndexAny(line, "=:")
		if i <= 0 {
			return nil, fmt.Errorf("--client-properties %s line %d: not key=value", path, n)
		}
		out[strings.TrimSpace(line[:i])] = strings.TrimSpace(line[i+1:])
	}
	return out, sc.Err()
}

var jaasOption = regexp.MustCompile(`(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"`)

// parseJAAS reads the username and password of a PlainLoginModule or
// ScramLoginModule sasl.jaas.config, or the principal of an
// OAuthBearerLoginModule's unsecured login (unsecuredLoginStringClaim_sub;
// no password: the token is made per connection).
func parseJAAS(v string) (user, pass string, err error) {
	oauth := strings.Contains(v, "OAuthBearerLoginModule")
	if !oauth && !strings.Contains(v, "PlainLoginModule") && !strings.Contains(v, "ScramLoginModule") {
		return "", "", fmt.Errorf("only org.apache.kafka.common.security.plain.PlainLoginModule, org.apache.kafka.common.security.scram.ScramLoginModule and org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule (unsecured) are understood")
	}
	for _, m := range jaasOption.FindAllStringSubmatch(v, -1) {
		val := strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(m[2])
		switch m[1] {
		case "username":
			user = val
		case "password":
			pass = val
		case "unsecuredLoginStringClaim_sub":
			user = val
		}
	}
	if oauth {
		if user == "" {
			return "", "", fmt.Errorf(`give unsecuredLoginStringClaim_sub="..." (the principal) in the login module's options`)
		}
		return user, "", nil
	}
	if user == "" || pass == "" {
		return "", "", fmt.Errorf(`give username="..." password="..." in the login module's options`)
	}
	return user, pass, nil
}
