//! The methods a run can use, by the names users write: what every setting is declared for,
//! below the code that runs them.

/// The methods a pipeline can name (`--method`, `name` in a pipeline file).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum MethodName {
    /// MinHash signatures + LSH (approximate Jaccard, fast at any size).
    Minhash,
    /// Exact Jaccard of shingle sets.
    Jaccard,
    /// Exact n-gram resemblance (Text::DeDuper: word 5-grams, above 0.2).
    Resemblance,
    /// SimHash fingerprints within a Hamming distance.
    Simhash,
    /// Embeddings in a vector index propose top-k candidates; MinHash confirms them.
    TwoStage,
}

impl MethodName {
    /// The name as a user writes it (`two-stage`).
    pub fn as_str(self) -> &'static str {
        match self {
            MethodName::Minhash => "minhash",
            MethodName::Jaccard => "jaccard",
            MethodName::Resemblance => "resemblance",
            MethodName::Simhash => "simhash",
            MethodName::TwoStage => "two-stage",
        }
    }
}

impl std::str::FromStr for MethodName {
    type Err = String;

    /// A method by the name a user writes (`two-stage`).
    fn from_str(name: &str) -> Result<Self, String> {
        <MethodName as clap::ValueEnum>::value_variants()
            .iter()
            .copied()
            .find(|method| method.as_str() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = <MethodName as clap::ValueEnum>::value_variants()
                    .iter()
                    .map(|m| m.as_str())
                    .collect();
                format!(
                    "no method is called {name:?}: give one of {}",
                    names.join(", ")
                )
            })
    }
}
