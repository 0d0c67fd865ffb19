// Label syntax as the API server validates it (k8s.io/apimachinery/pkg/util/validation:
// IsValidLabelValue, IsQualifiedName), so that a value bound for a label or a node selector is
// refused with a clear message before a write fails with 422.

const NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Whether `s` is a DNS subdomain (IsDNS1123Subdomain): what every volume's and node's name is. */
export function isDnsSubdomain(s: string): boolean {
  return s.length <= 253 && DNS_SUBDOMAIN.test(s);
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Whether `s` is a DNS label (IsDNS1123Label): what every namespace's name is. */
export function isDnsLabel(s: string): boolean {
  return s.length <= 63 && DNS_LABEL.test(s);
}

/** Why a non-empty label value is invalid, or undefined. */
export function labelValueProblem(value: string): string | undefined {
  if (value.length > 63) return `"${value.slice(0, 70)}…" is longer than 63 characters`;
  if (!NAME.test(value)) return `"${value}" must be alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric`;
  return undefined;
}

/** Why a label key ([prefix/]name) is invalid, or undefined. */
export function labelKeyProblem(key: string): string | undefined {
  const parts = key.split('/');
  if (parts.length > 2) return `"${key}" has more than one "/"`;
  const name = parts.at(-1)!;
  if (parts.length === 2 && (parts[0]!.length > 253 || !DNS_SUBDOMAIN.test(parts[0]!))) return `the prefix of "${key}" must be a DNS subdomain`;
  if (name.length === 0 || name.length > 63 || !NAME.test(name)) return `the name part of "${key}" must be 1-63 alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric`;
  return undefined;
}
