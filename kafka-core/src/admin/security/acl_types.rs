//! ACL bindings and filters, and the wire enums they are made of (Java's
//! `ResourceType`, `PatternType`, `AclOperation`, `AclPermissionType`).

use std::fmt;

use crate::admin::AdminError;
use crate::protocol::messages::create_acls::request::AclCreation;
use crate::protocol::messages::delete_acls::request::DeleteAclsFilter;

/// Defines a wire enum with Java's names and codes; codes it does not know are kept in
/// `Unknown(code)` (code 0 is Java's `UNKNOWN`).
macro_rules! wire_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $code:literal, $text:literal;)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)*
            /// A code this client does not know (0 is `UNKNOWN`), kept as sent.
            Unknown(i8),
        }

        impl $name {
            /// The wire code.
            pub fn code(self) -> i8 {
                match self {
                    $($name::$variant => $code,)*
                    $name::Unknown(code) => code,
                }
            }

            /// The value of a wire code (`Unknown` for codes this client does not know).
            pub fn from_code(code: i8) -> Self {
                match code {
                    $($code => $name::$variant,)*
                    other => $name::Unknown(other),
                }
            }

            /// Java's name (`UNKNOWN` for unknown codes).
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                    $name::Unknown(_) => "UNKNOWN",
                }
            }

            /// Whether this is an unknown code.
            pub fn is_unknown(self) -> bool {
                matches!(self, $name::Unknown(_))
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }

        impl std::str::FromStr for $name {
            type Err = AdminError;

            /// Parses Java's name, case-insensitively.
            fn from_str(s: &str) -> Result<Self, AdminError> {
                $(if s.eq_ignore_ascii_case($text) {
                    return Ok($name::$variant);
                })*
                Err(AdminError::Invalid(format!("unknown {}: {s}", stringify!($name))))
            }
        }
    };
}

wire_enum!(
    /// The type of a resource an ACL applies to (Java's `ResourceType`).
    ResourceType {
        /// Matches any resource type (filters only).
        Any = 1, "ANY";
        /// A topic.
        Topic = 2, "TOPIC";
        /// A consumer group.
        Group = 3, "GROUP";
        /// The cluster.
        Cluster = 4, "CLUSTER";
        /// A transactional id.
        TransactionalId = 5, "TRANSACTIONAL_ID";
        /// A delegation token.
        DelegationToken = 6, "DELEGATION_TOKEN";
        /// A user.
        User = 7, "USER";
    }
);

wire_enum!(
    /// How a resource name is matched (Java's `PatternType`).
    PatternType {
        /// Any pattern type (filters only).
        Any = 1, "ANY";
        /// Every binding that applies to the filter's name: literal, wildcard and
        /// prefixed matches (filters only).
        Match = 2, "MATCH";
        /// The name exactly (`*` is the wildcard).
        Literal = 3, "LITERAL";
        /// Names that start with the name.
        Prefixed = 4, "PREFIXED";
    }
);

wire_enum!(
    /// An operation an ACL allows or denies (Java's `AclOperation`).
    AclOperation {
        /// Any operation (filters only).
        Any = 1, "ANY";
        /// All operations.
        All = 2, "ALL";
        /// Read.
        Read = 3, "READ";
        /// Write.
        Write = 4, "WRITE";
        /// Create.
        Create = 5, "CREATE";
        /// Delete.
        Delete = 6, "DELETE";
        /// Alter.
        Alter = 7, "ALTER";
        /// Describe.
        Describe = 8, "DESCRIBE";
        /// Cluster action (broker-to-broker).
        ClusterAction = 9, "CLUSTER_ACTION";
        /// Describe configs.
        DescribeConfigs = 10, "DESCRIBE_CONFIGS";
        /// Alter configs.
        AlterConfigs = 11, "ALTER_CONFIGS";
        /// Idempotent write.
        IdempotentWrite = 12, "IDEMPOTENT_WRITE";
        /// Create delegation tokens.
        CreateTokens = 13, "CREATE_TOKENS";
        /// Describe delegation tokens.
        DescribeTokens = 14, "DESCRIBE_TOKENS";
        /// Two-phase commit of transactions.
        TwoPhaseCommit = 15, "TWO_PHASE_COMMIT";
    }
);

wire_enum!(
    /// Whether an ACL allows or denies (Java's `AclPermissionType`).
    AclPermissionType {
        /// Any permission (filters only).
        Any = 1, "ANY";
        /// Denies the operation.
        Deny = 2, "DENY";
        /// Allows the operation.
        Allow = 3, "ALLOW";
    }
);

/// A resource pattern: type, name and how the name matches.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResourcePattern {
    /// Resource type.
    pub resource_type: ResourceType,
    /// Resource name (`*` with `Literal` is every resource of the type).
    pub name: String,
    /// How the name matches.
    pub pattern_type: PatternType,
}

impl ResourcePattern {
    /// A pattern for `name` of `resource_type`.
    pub fn new(
        resource_type: ResourceType,
        name: impl Into<String>,
        pattern_type: PatternType,
    ) -> Self {
        ResourcePattern {
            resource_type,
            name: name.into(),
            pattern_type,
        }
    }
}

/// Who may (or may not) do what from where.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AccessControlEntry {
    /// Principal, as `Type:name` (`User:alice`, `User:*`).
    pub principal: String,
    /// Host (`*`: any host).
    pub host: String,
    /// Operation.
    pub operation: AclOperation,
    /// Allow or deny.
    pub permission: AclPermissionType,
}

impl AccessControlEntry {
    /// An entry for `principal` from `host`.
    pub fn new(
        principal: impl Into<String>,
        host: impl Into<String>,
        operation: AclOperation,
        permission: AclPermissionType,
    ) -> Self {
        AccessControlEntry {
            principal: principal.into(),
            host: host.into(),
            operation,
            permission,
        }
    }
}

/// An ACL: a resource pattern and an access control entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AclBinding {
    /// What it applies to.
    pub pattern: ResourcePattern,
    /// Who, where, what, allow or deny.
    pub entry: AccessControlEntry,
}

impl AclBinding {
    /// A binding of `entry` to `pattern`.
    pub fn new(pattern: ResourcePattern, entry: AccessControlEntry) -> Self {
        AclBinding { pattern, entry }
    }

    /// The filter that matches exactly this binding.
    pub fn to_filter(&self) -> AclBindingFilter {
        AclBindingFilter {
            pattern: ResourcePatternFilter {
                resource_type: self.pattern.resource_type,
                name: Some(self.pattern.name.clone()),
                pattern_type: self.pattern.pattern_type,
            },
            entry: AccessControlEntryFilter {
                principal: Some(self.entry.principal.clone()),
                host: Some(self.entry.host.clone()),
                operation: self.entry.operation,
                permission: self.entry.permission,
            },
        }
    }

    /// Why the binding cannot be created, if it cannot: unknown values, or filter-only
    /// values (`ANY`, `MATCH`).
    pub(super) fn invalid(&self) -> Option<String> {
        let p = &self.pattern;
        let e = &self.entry;
        let bad = p.resource_type.is_unknown()
            || p.resource_type == ResourceType::Any
            || p.pattern_type.is_unknown()
            || matches!(p.pattern_type, PatternType::Any | PatternType::Match)
            || e.operation.is_unknown()
            || e.operation == AclOperation::Any
            || e.permission.is_unknown()
            || e.permission == AclPermissionType::Any;
        bad.then(|| "a binding cannot have UNKNOWN, ANY or MATCH values".to_string())
    }

    pub(super) fn to_wire(&self) -> AclCreation {
        AclCreation {
            resource_type: self.pattern.resource_type.code(),
            resource_name: self.pattern.name.clone(),
            resource_pattern_type: self.pattern.pattern_type.code(),
            principal: self.entry.principal.clone(),
            host: self.entry.host.clone(),
            operation: self.entry.operation.code(),
            permission_type: self.entry.permission.code(),
            ..Default::default()
        }
    }
}

/// Matches resource patterns: `None` name and `Any` types match everything.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResourcePatternFilter {
    /// Resource type (`Any`: every type).
    pub resource_type: ResourceType,
    /// Resource name (`None`: any name).
    pub name: Option<String>,
    /// Pattern type (`Any`: every type; `Match`: every pattern that applies to `name`).
    pub pattern_type: PatternType,
}

impl ResourcePatternFilter {
    /// Matches every resource pattern.
    pub const ANY: ResourcePatternFilter = ResourcePatternFilter {
        resource_type: ResourceType::Any,
        name: None,
        pattern_type: PatternType::Any,
    };

    /// A filter on type, name and pattern type.
    pub fn new(
        resource_type: ResourceType,
        name: Option<String>,
        pattern_type: PatternType,
    ) -> Self {
        ResourcePatternFilter {
            resource_type,
            name,
            pattern_type,
        }
    }
}

/// Matches access control entries: `None` strings and `Any` values match everything.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AccessControlEntryFilter {
    /// Principal (`None`: any).
    pub principal: Option<String>,
    /// Host (`None`: any).
    pub host: Option<String>,
    /// Operation (`Any`: every operation).
    pub operation: AclOperation,
    /// Permission (`Any`: allow and deny).
    pub permission: AclPermissionType,
}

impl AccessControlEntryFilter {
    /// Matches every entry.
    pub const ANY: AccessControlEntryFilter = AccessControlEntryFilter {
        principal: None,
        host: None,
        operation: AclOperation::Any,
        permission: AclPermissionType::Any,
    };

    /// A filter on principal, host, operation and permission.
    pub fn new(
        principal: Option<String>,
        host: Option<String>,
        operation: AclOperation,
        permission: AclPermissionType,
    ) -> Self {
        AccessControlEntryFilter {
            principal,
            host,
            operation,
            permission,
        }
    }
}

/// Matches ACL bindings (DescribeAcls, DeleteAcls).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AclBindingFilter {
    /// Which resource patterns.
    pub pattern: ResourcePatternFilter,
    /// Which entries.
    pub entry: AccessControlEntryFilter,
}

impl AclBindingFilter {
    /// Matches every binding.
    pub const ANY: AclBindingFilter = AclBindingFilter {
        pattern: ResourcePatternFilter::ANY,
        entry: AccessControlEntryFilter::ANY,
    };

    /// A filter of both parts.
    pub fn new(pattern: ResourcePatternFilter, entry: AccessControlEntryFilter) -> Self {
        AclBindingFilter { pattern, entry }
    }

    /// Why the filter cannot be sent, if it cannot (unknown values).
    pub(super) fn invalid(&self) -> Option<AdminError> {
        let unknown = self.pattern.resource_type.is_unknown()
            || self.pattern.pattern_type.is_unknown()
            || self.entry.operation.is_unknown()
            || self.entry.permission.is_unknown();
        unknown.then(|| AdminError::Invalid("a filter cannot have UNKNOWN values".into()))
    }

    pub(super) fn to_delete_wire(&self) -> DeleteAclsFilter {
        DeleteAclsFilter {
            resource_type_filter: self.pattern.resource_type.code(),
            resource_name_filter: self.pattern.name.clone(),
            pattern_type_filter: self.pattern.pattern_type.code(),
            principal_filter: self.entry.principal.clone(),
            host_filter: self.entry.host.clone(),
            operation: self.entry.operation.code(),
            permission_type: self.entry.permission.code(),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_unknown_codes_are_kept() {
        for code in -2..20i8 {
            assert_eq!(ResourceType::from_code(code).code(), code);
            assert_eq!(PatternType::from_code(code).code(), code);
            assert_eq!(AclOperation::from_code(code).code(), code);
            assert_eq!(AclPermissionType::from_code(code).code(), code);
        }
        assert_eq!(ResourceType::from_code(2), ResourceType::Topic);
        assert_eq!(ResourceType::from_code(7), ResourceType::User);
        assert_eq!(PatternType::from_code(4), PatternType::Prefixed);
        assert_eq!(AclOperation::from_code(15), AclOperation::TwoPhaseCommit);
        assert_eq!(AclPermissionType::from_code(3), AclPermissionType::Allow);
        assert_eq!(AclOperation::from_code(99), AclOperation::Unknown(99));
        assert_eq!(AclOperation::Unknown(0).name(), "UNKNOWN");
        assert_eq!(
            AclOperation::IdempotentWrite.to_string(),
            "IDEMPOTENT_WRITE"
        );
        assert_eq!(
            "transactional_id".parse::<ResourceType>().ok(),
            Some(ResourceType::TransactionalId)
        );
        assert!("nope".parse::<PatternType>().is_err());
    }
}
