//! Enums whose values are text labels (stored in text columns, sent on the wire, kept in the
//! engine's JSON): each label is written once, in the enum's declaration.

/// Declares `pub enum $name` whose values are the given labels, with `ALL`, `LABELS`,
/// `as_str`, `parse`, `Display`, serde as the label, the sqlx text encoding (feature `sqlx`;
/// decoding an unknown label is an error, not a guess), and the macro `$labels!(Variant)`
/// that expands to the label as a literal, for SQL built with `concat!`.
macro_rules! text_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident as $labels:ident {
            $($(#[$vmeta:meta])* $variant:ident = $label:literal),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            /// Every label, in declaration order.
            pub const LABELS: &'static [&'static str] = &[$($label),+];

            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $label),+
                }
            }

            pub fn parse(label: &str) -> Option<$name> {
                match label {
                    $($label => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        /// The label of a value of the enum of the same name, as a literal (for `concat!`).
        #[macro_export]
        macro_rules! $labels {
            $(($variant) => { $label };)+
        }

        impl $crate::Labelled for $name {
            const LABELS: &'static [&'static str] = $name::LABELS;

            fn parse(label: &str) -> Option<$name> {
                $name::parse(label)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let label = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
                $name::parse(&label).ok_or_else(|| {
                    serde::de::Error::unknown_variant(&label, $name::LABELS)
                })
            }
        }

        #[cfg(feature = "sqlx")]
        impl sqlx::Type<sqlx::Postgres> for $name {
            fn type_info() -> sqlx::postgres::PgTypeInfo {
                <&str as sqlx::Type<sqlx::Postgres>>::type_info()
            }

            fn compatible(ty: &sqlx::postgres::PgTypeInfo) -> bool {
                <&str as sqlx::Type<sqlx::Postgres>>::compatible(ty)
            }
        }

        #[cfg(feature = "sqlx")]
        impl<'r> sqlx::Decode<'r, sqlx::Postgres> for $name {
            fn decode(
                value: sqlx::postgres::PgValueRef<'r>,
            ) -> Result<Self, sqlx::error::BoxDynError> {
                let label = <&str as sqlx::Decode<sqlx::Postgres>>::decode(value)?;
                $name::parse(label).ok_or_else(|| {
                    format!(concat!("not a ", stringify!($name), ": {:?}"), label).into()
                })
            }
        }

        #[cfg(feature = "sqlx")]
        impl<'q> sqlx::Encode<'q, sqlx::Postgres> for $name {
            fn encode_by_ref(
                &self,
                buf: &mut sqlx::postgres::PgArgumentBuffer,
            ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
                <&str as sqlx::Encode<sqlx::Postgres>>::encode_by_ref(&self.as_str(), buf)
            }
        }
    };
}

pub(crate) use text_enum;
