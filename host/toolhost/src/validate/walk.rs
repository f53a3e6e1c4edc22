//! Step 4: the error walk. One walk serves both dialects ([`Dialect`]): it visits the keyword
//! groups in the order the dialect lists them and reports each failure as data ([`Failure`]);
//! the dialect's switches decide where a failure is reported and which ones a union shows.
//! TypeBox 1.3.7's walk (`schema/engine`, `ErrorSchema`) is Pi 0.85's, pi-schema 1.6.0's
//! `Explainer` (`dist/explain.js`) Pi 1.5's and later.

use super::*;

impl ArgumentSchema {
    /// Validates `value` against `schema`, appending the failures `dialect` reports to `out`.
    /// Every applicable keyword reports (no stop at the first failure), except that in
    /// pi-schema a failed `type` ends the node.
    pub(super) fn walk(
        &self,
        dialect: &Dialect,
        schema: &Value,
        value: &Value,
        path: &str,
        depth: usize,
        out: &mut Vec<RawIssue>,
    ) -> bool {
        if depth > MAX_SCHEMA_DEPTH || !walk_step() {
            return true;
        }
        let keywords = match schema {
            Value::Bool(true) => return true,
            Value::Bool(false) => {
                out.push(RawIssue::new(path, Failure::FalseSchema));
                return false;
            }
            Value::Object(keywords) => keywords,
            _ => return true,
        };
        let mut ok = true;
        for step in dialect.node {
            ok &= match step {
                NodeStep::Type => match keywords.get("type") {
                    Some(expected) if fails_type(expected, value) => {
                        out.push(RawIssue::new(
                            path,
                            Failure::Type {
                                expected: expected.clone(),
                                got: js_type_name(value),
                            },
                        ));
                        if dialect.type_ends_node {
                            return false;
                        }
                        false
                    }
                    _ => true,
                },
                // Each group of keywords applies only to values of its kind.
                NodeStep::Kind => match value {
                    Value::Object(object) => {
                        self.walk_object(dialect, keywords, value, object, path, depth, out)
                    }
                    Value::Array(items) => {
                        self.walk_array(dialect, keywords, items, path, depth, out)
                    }
                    Value::String(text) => self.walk_string(dialect, keywords, text, path, out),
                    Value::Number(number) => {
                        walk_number(dialect, keywords, js_number(number), path, out)
                    }
                    _ => true,
                },
                NodeStep::Ref => match keywords.get("$ref") {
                    Some(Value::String(reference)) => match self.resolve_ref(reference) {
                        Some(target) => self.walk(dialect, target, value, path, depth + 1, out),
                        None => true,
                    },
                    _ => true,
                },
                NodeStep::Const => match keywords.get("const") {
                    Some(constant) if !js_deep_equal(value, constant) => {
                        out.push(RawIssue::new(path, Failure::Const(constant.clone())));
                        false
                    }
                    _ => true,
                },
                NodeStep::Enum => match keywords.get("enum") {
                    Some(Value::Array(options))
                        if !options.iter().any(|option| js_deep_equal(value, option)) =>
                    {
                        out.push(RawIssue::new(path, Failure::Enum(options.clone())));
                        false
                    }
                    _ => true,
                },
                NodeStep::If => match keywords.get("if").filter(|s| is_schema(s)) {
                    Some(condition) => {
                        self.walk_if(dialect, keywords, condition, value, path, depth, out)
                    }
                    None => true,
                },
                NodeStep::Not => match keywords.get("not").filter(|s| is_schema(s)) {
                    Some(negated) if self.check_as(dialect, negated, value) => {
                        out.push(RawIssue::new(path, Failure::Not));
                        false
                    }
                    _ => true,
                },
                NodeStep::AllOf => {
                    // Every member runs in its own context; the failing members' issues are
                    // reported, with no line of allOf's own.
                    let mut passed = true;
                    for member in schema_list(keywords.get("allOf")).unwrap_or_default() {
                        let mut member_issues = Vec::new();
                        if !self.walk(dialect, member, value, path, depth + 1, &mut member_issues) {
                            out.append(&mut member_issues);
                            passed = false;
                        }
                    }
                    passed
                }
                NodeStep::AnyOf => match schema_list(keywords.get("anyOf")) {
                    Some(members) => {
                        self.walk_union(dialect, members, false, value, path, depth, out)
                    }
                    None => true,
                },
                NodeStep::OneOf => match schema_list(keywords.get("oneOf")) {
                    Some(members) => {
                        self.walk_union(dialect, members, true, value, path, depth, out)
                    }
                    None => true,
                },
            };
        }
        // Issues are only appended and only the first few are ever shown, so the rest can go
        // at once: kept, nested unions over a deep value would pile them up by the million.
        if let Some(max_issues) = dialect.max_issues {
            out.truncate(max_issues);
        }
        ok
    }

    /// `anyOf` (`one_of: false`) or `oneOf`: every member is walked once, in its own context;
    /// what a failure reports is the dialect's choice ([`Unions`]).
    #[allow(clippy::too_many_arguments)]
    fn walk_union(
        &self,
        dialect: &Dialect,
        members: &[Value],
        one_of: bool,
        value: &Value,
        path: &str,
        depth: usize,
        out: &mut Vec<RawIssue>,
    ) -> bool {
        let mut passing = 0;
        let mut member_issues = Vec::with_capacity(members.len());
        for member in members {
            let mut issues = Vec::new();
            if self.walk(dialect, member, value, path, depth + 1, &mut issues) {
                passing += 1;
            }
            member_issues.push(issues);
        }
        if passing == 1 || (!one_of && passing > 1) {
            return true;
        }
        if passing > 1 {
            // Several oneOf members pass: the union's line alone.
            out.push(RawIssue::new(path, Failure::SeveralAlternatives));
            return false;
        }
        match dialect.unions {
            Unions::MembersThenSummary => {
                // Each member's issues, then the union's line (C184).
                out.extend(member_issues.into_iter().flatten());
                out.push(RawIssue::new(path, Failure::NoAlternative { one_of }));
            }
            Unions::BestBranch => {
                // A tagged union reports the branch its tag selects, or the tag itself.
                if let (Some((key, tags)), Value::Object(object)) = (self.union_tag(members), value)
                {
                    let selected = object
                        .get(key)
                        .and_then(|tag| tags.iter().position(|t| js_strict_equal(t, tag)));
                    match selected {
                        Some(index) => out.append(&mut member_issues[index]),
                        None => out.push(RawIssue::new(
                            &dialect.child(path, key),
                            Failure::Enum(tags),
                        )),
                    }
                    return false;
                }
                // Otherwise an object is blamed on the branch declaring most of its keys, then
                // on the branch whose first issue is deepest (the longer pointer, in UTF-16
                // units as JavaScript measures it); the first such branch wins ties.
                let mut best: Option<(usize, usize, Vec<RawIssue>)> = None;
                for (member, issues) in members.iter().zip(member_issues) {
                    let Some(first) = issues.first() else {
                        continue;
                    };
                    let declared = match value {
                        Value::Object(object) => self.declared_keys(member, object),
                        _ => 0,
                    };
                    let reach = first.instance_path.encode_utf16().count();
                    let better = best.as_ref().is_none_or(|(best_declared, best_reach, _)| {
                        declared > *best_declared
                            || (declared == *best_declared && reach > *best_reach)
                    });
                    if better {
                        best = Some((declared, reach, issues));
                    }
                }
                match best {
                    Some((_, _, mut issues)) => out.append(&mut issues),
                    None => out.push(RawIssue::new(path, Failure::NoAlternative { one_of })),
                }
            }
        }
        false
    }

    /// A member of a union, through one `$ref` (pi-schema resolves one level).
    fn union_member<'a>(&'a self, member: &'a Value) -> Option<&'a Map<String, Value>> {
        let node = match member.get("$ref") {
            Some(Value::String(reference)) => self.resolve_ref(reference)?,
            _ => member,
        };
        node.as_object()
    }

    /// pi-schema's `tagOf`: the first property of the first member that every member declares
    /// with a distinct primitive `const`, with those constants in member order.
    fn union_tag<'a>(&'a self, members: &'a [Value]) -> Option<(&'a str, Vec<Value>)> {
        let resolved: Vec<Option<&Map<String, Value>>> = members
            .iter()
            .map(|member| self.union_member(member))
            .collect();
        let first = resolved.first().copied().flatten()?;
        let properties = first.get("properties")?.as_object()?;
        js_entries(properties).into_iter().find_map(|(key, _)| {
            let tags: Option<Vec<Value>> = resolved
                .iter()
                .map(|member| {
                    let constant = (*member)?.get("properties")?.get(key)?.get("const")?;
                    (!constant.is_object() && !constant.is_array()).then(|| constant.clone())
                })
                .collect();
            let tags = tags?;
            let distinct = tags.iter().enumerate().all(|(index, tag)| {
                !tags[..index]
                    .iter()
                    .any(|earlier| js_strict_equal(earlier, tag))
            });
            distinct.then_some((key.as_str(), tags))
        })
    }

    /// pi-schema's `declaredKeys`: how many keys of `object` the member declares in
    /// `properties`.
    fn declared_keys(&self, member: &Value, object: &Map<String, Value>) -> usize {
        let Some(properties) = self
            .union_member(member)
            .and_then(|node| node.get("properties"))
            .and_then(Value::as_object)
        else {
            return 0;
        };
        object
            .keys()
            .filter(|key| properties.contains_key(*key))
            .count()
    }

    /// The object keywords, in the order of `dialect.object`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn walk_object(
        &self,
        dialect: &Dialect,
        keywords: &Map<String, Value>,
        value: &Value,
        object: &Map<String, Value>,
        path: &str,
        depth: usize,
        out: &mut Vec<RawIssue>,
    ) -> bool {
        let mut ok = true;
        let properties = keywords
            .get("properties")
            .and_then(Value::as_object)
            .filter(|properties| properties.values().all(is_schema));
        let pattern_properties = keywords
            .get("patternProperties")
            .and_then(Value::as_object)
            .filter(|patterns| patterns.values().all(is_schema));
        let count = object.len() as f64;
        for step in dialect.object {
            match step {
                ObjectStep::Required => {
                    if let Some(Value::Array(required)) = keywords.get("required")
                        && required.iter().all(Value::is_string)
                    {
                        let missing: Vec<String> = required
                            .iter()
                            .filter_map(Value::as_str)
                            .filter(|name| !object.contains_key(*name))
                            .map(str::to_owned)
                            .collect();
                        ok &= missing.is_empty();
                        match dialect.required {
                            // One issue naming every missing property; Pi 0.85 appends the
                            // first to the path.
                            PerKey::Summary if !missing.is_empty() => {
                                out.push(RawIssue::new(path, Failure::Required { missing }));
                            }
                            PerKey::Summary => {}
                            PerKey::AtKey => {
                                for name in missing {
                                    out.push(RawIssue::new(
                                        &dialect.child(path, &name),
                                        Failure::Required {
                                            missing: vec![name],
                                        },
                                    ));
                                }
                            }
                        }
                    }
                }
                ObjectStep::Additional => {
                    let Some(additional) = keywords
                        .get("additionalProperties")
                        .filter(|s| is_schema(s))
                    else {
                        continue;
                    };
                    // Inner issues of an additional property are dropped: only the summary
                    // line shows.
                    let mut rejected = false;
                    for (key, property) in js_entries(object) {
                        let known = properties
                            .is_some_and(|properties| properties.contains_key(key))
                            || pattern_properties.is_some_and(|patterns| {
                                patterns
                                    .keys()
                                    .any(|pattern| self.regex_matches(pattern, key))
                            });
                        let mut sink = Vec::new();
                        if !known
                            && !self.walk(
                                dialect,
                                additional,
                                property,
                                &dialect.child(path, key),
                                depth + 1,
                                &mut sink,
                            )
                        {
                            rejected = true;
                        }
                    }
                    if rejected {
                        out.push(RawIssue::new(path, Failure::AdditionalProperty));
                        ok = false;
                    }
                }
                ObjectStep::Dependencies => {
                    let Some(Value::Object(dependencies)) = keywords.get("dependencies") else {
                        continue;
                    };
                    for (key, dependency) in dependencies {
                        if !object.contains_key(key) {
                            continue;
                        }
                        match dependency {
                            Value::Array(names) => {
                                // `Array.every` stops at the first missing dependency.
                                if names.iter().any(|name| {
                                    name.as_str().is_some_and(|n| !object.contains_key(n))
                                }) {
                                    out.push(RawIssue::new(path, missing_dependency(key, names)));
                                    ok = false;
                                }
                            }
                            schema => ok &= self.walk(dialect, schema, value, path, depth + 1, out),
                        }
                    }
                }
                ObjectStep::DependentRequired => {
                    let Some(Value::Object(dependent)) = keywords.get("dependentRequired") else {
                        continue;
                    };
                    for (key, names) in dependent {
                        let (true, Value::Array(names)) = (object.contains_key(key), names) else {
                            continue;
                        };
                        // One issue per missing dependency, each naming the whole list.
                        for name in names.iter().filter_map(Value::as_str) {
                            if !object.contains_key(name) {
                                out.push(RawIssue::new(path, missing_dependency(key, names)));
                                ok = false;
                            }
                        }
                    }
                }
                ObjectStep::AllDependencies => {
                    // `{...dependentRequired, ...dependencies}`: a key in both keeps its place
                    // and takes the `dependencies` entry.
                    let mut merged = Map::new();
                    for keyword in ["dependentRequired", "dependencies"] {
                        if let Some(Value::Object(entries)) = keywords.get(keyword) {
                            for (key, entry) in entries {
                                merged.insert(key.clone(), entry.clone());
                            }
                        }
                    }
                    for (key, entry) in js_entries(&merged) {
                        if !object.contains_key(key) {
                            continue;
                        }
                        match entry {
                            Value::Array(names) => {
                                for name in names.iter().filter_map(Value::as_str) {
                                    if !object.contains_key(name) {
                                        out.push(RawIssue::new(
                                            &dialect.child(path, name),
                                            missing_dependency(key, names),
                                        ));
                                        ok = false;
                                    }
                                }
                            }
                            schema => ok &= self.walk(dialect, schema, value, path, depth + 1, out),
                        }
                    }
                }
                ObjectStep::DependentSchemas => {
                    let Some(Value::Object(dependent)) = keywords.get("dependentSchemas") else {
                        continue;
                    };
                    for (key, schema) in js_entries(dependent) {
                        if object.contains_key(key) {
                            ok &= self.walk(dialect, schema, value, path, depth + 1, out);
                        }
                    }
                }
                ObjectStep::PatternProperties => {
                    for (pattern, property_schema) in pattern_properties.into_iter().flatten() {
                        let matching = js_entries(object)
                            .into_iter()
                            .filter(|(key, _)| self.regex_matches(pattern, key))
                            .map(|(key, property)| (key, (property, property_schema)));
                        ok &= self.walk_children(dialect, matching, path, depth, out);
                    }
                }
                ObjectStep::Properties => {
                    let Some(properties) = properties else {
                        continue;
                    };
                    let declared: Vec<(&String, &Value)> = if dialect.properties_in_js_order {
                        js_entries(properties)
                    } else {
                        properties.iter().collect()
                    };
                    // The schema's order, not the order of the arguments.
                    let present = declared.into_iter().filter_map(|(key, property_schema)| {
                        Some((key, (object.get(key)?, property_schema)))
                    });
                    ok &= self.walk_children(dialect, present, path, depth, out);
                }
                ObjectStep::PropertyNames => {
                    let Some(names_schema) = keywords.get("propertyNames").filter(|s| is_schema(s))
                    else {
                        continue;
                    };
                    let invalid: Vec<String> = js_entries(object)
                        .into_iter()
                        .map(|(key, _)| key)
                        .filter(|key| {
                            let mut sink = Vec::new();
                            !self.walk(
                                dialect,
                                names_schema,
                                &Value::String((*key).to_owned()),
                                &dialect.child(path, key),
                                depth + 1,
                                &mut sink,
                            )
                        })
                        .cloned()
                        .collect();
                    if !invalid.is_empty() {
                        out.push(RawIssue::new(path, Failure::PropertyNames { invalid }));
                        ok = false;
                    }
                }
                ObjectStep::EachKey => {
                    ok &= self.walk_each_key(
                        dialect,
                        keywords,
                        properties,
                        pattern_properties,
                        object,
                        path,
                        depth,
                        out,
                    );
                }
                ObjectStep::MinProperties => ok &= MIN_PROPERTIES.check(keywords, count, path, out),
                ObjectStep::MaxProperties => ok &= MAX_PROPERTIES.check(keywords, count, path, out),
            }
        }
        ok
    }

    /// pi-schema's pass over the keys of an object (JavaScript's key order): each key's
    /// matching `patternProperties`, else `additionalProperties` (`false` reports the key as
    /// unknown; a schema reports the value's own issues), then `propertyNames` at the key.
    #[allow(clippy::too_many_arguments)]
    fn walk_each_key(
        &self,
        dialect: &Dialect,
        keywords: &Map<String, Value>,
        properties: Option<&Map<String, Value>>,
        pattern_properties: Option<&Map<String, Value>>,
        object: &Map<String, Value>,
        path: &str,
        depth: usize,
        out: &mut Vec<RawIssue>,
    ) -> bool {
        let additional = keywords
            .get("additionalProperties")
            .filter(|s| is_schema(s));
        let names_schema = keywords.get("propertyNames").filter(|s| is_schema(s));
        let patterns = pattern_properties.map(js_entries).unwrap_or_default();
        let mut ok = true;
        for (key, property) in js_entries(object) {
            let at = dialect.child(path, key);
            let mut matched = properties.is_some_and(|properties| properties.contains_key(key));
            for (pattern, property_schema) in &patterns {
                if self.regex_matches(pattern, key) {
                    matched = true;
                    ok &= self.walk(dialect, property_schema, property, &at, depth + 1, out);
                }
            }
            match additional {
                Some(Value::Bool(false)) if !matched => {
                    out.push(RawIssue::new(&at, Failure::AdditionalProperty));
                    ok = false;
                }
                Some(additional) if !matched => {
                    ok &= self.walk(dialect, additional, property, &at, depth + 1, out);
                }
                _ => {}
            }
            if let Some(names_schema) = names_schema
                && !self.check_as(dialect, names_schema, &Value::String(key.clone()))
            {
                out.push(RawIssue::new(
                    &at,
                    Failure::PropertyNames {
                        invalid: vec![key.clone()],
                    },
                ));
                ok = false;
            }
        }
        ok
    }

    /// The array keywords, in the order of `dialect.array`.
    pub(super) fn walk_array(
        &self,
        dialect: &Dialect,
        keywords: &Map<String, Value>,
        items: &[Value],
        path: &str,
        depth: usize,
        out: &mut Vec<RawIssue>,
    ) -> bool {
        let mut ok = true;
        let prefix = schema_list(keywords.get("prefixItems"));
        let count = items.len() as f64;
        for step in dialect.array {
            match step {
                ArrayStep::AdditionalItems => {
                    let (Some(Value::Array(tuple)), Some(additional)) = (
                        keywords.get("items"),
                        keywords.get("additionalItems").filter(|s| is_schema(s)),
                    ) else {
                        continue;
                    };
                    // `Array.every`: only the first failing additional item reports.
                    for (index, item) in items.iter().enumerate().skip(tuple.len()) {
                        if !self.walk(
                            dialect,
                            additional,
                            item,
                            &dialect.child(path, &index.to_string()),
                            depth + 1,
                            out,
                        ) {
                            ok = false;
                            break;
                        }
                    }
                }
                ArrayStep::Contains => {
                    ok &= self.walk_contains(dialect, keywords, items, path, out);
                }
                ArrayStep::Items => match keywords.get("items") {
                    Some(Value::Array(tuple)) if tuple.iter().all(is_schema) => {
                        let pairs = items.iter().zip(tuple).enumerate();
                        ok &= self.walk_children(dialect, pairs, path, depth, out);
                    }
                    Some(item_schema) if is_schema(item_schema) => {
                        let offset = prefix.map_or(0, <[Value]>::len);
                        let rest = items.iter().map(|item| (item, item_schema));
                        let pairs = rest.enumerate().skip(offset);
                        ok &= self.walk_children(dialect, pairs, path, depth, out);
                    }
                    _ => {}
                },
                ArrayStep::PrefixItems => {
                    if let Some(prefix) = prefix {
                        let pairs = items.iter().zip(prefix).enumerate();
                        ok &= self.walk_children(dialect, pairs, path, depth, out);
                    }
                }
                ArrayStep::Elements => {
                    let (tuple, rest) = match keywords.get("items") {
                        Some(Value::Array(tuple)) => {
                            (tuple.as_slice(), keywords.get("additionalItems"))
                        }
                        rest => (prefix.unwrap_or_default(), rest),
                    };
                    let rest = rest.filter(|s| is_schema(s));
                    let pairs = items.iter().enumerate().filter_map(|(index, item)| {
                        let schema = tuple.get(index).or(rest)?;
                        Some((index, (item, schema)))
                    });
                    ok &= self.walk_children(dialect, pairs, path, depth, out);
                }
                ArrayStep::MinItems => ok &= MIN_ITEMS.check(keywords, count, path, out),
                ArrayStep::MaxItems => ok &= MAX_ITEMS.check(keywords, count, path, out),
                ArrayStep::UniqueItems => {
                    if keywords.get("uniqueItems") == Some(&Value::Bool(true))
                        && dialect.has_duplicates(items)
                    {
                        out.push(RawIssue::new(path, Failure::UniqueItems));
                        ok = false;
                    }
                }
            }
        }
        ok
    }

    /// `contains`. Without `dialect.contains_bounds` (TypeBox) `minContains`/`maxContains` are
    /// left to the backstop rather than reported wrongly here.
    fn walk_contains(
        &self,
        dialect: &Dialect,
        keywords: &Map<String, Value>,
        items: &[Value],
        path: &str,
        out: &mut Vec<RawIssue>,
    ) -> bool {
        let Some(contains) = keywords.get("contains").filter(|s| is_schema(s)) else {
            return true;
        };
        let (min, max) = if dialect.contains_bounds {
            (
                number_keyword(keywords, "minContains").unwrap_or(1.0),
                number_keyword(keywords, "maxContains").unwrap_or(f64::INFINITY),
            )
        } else if keywords.contains_key("minContains") || keywords.contains_key("maxContains") {
            return true;
        } else {
            (1.0, f64::INFINITY)
        };
        // pi-schema's `containsCheck`: count the matches, stopping once past the maximum.
        let mut matches = 0.0;
        for item in items {
            if self.check_as(dialect, contains, item) {
                matches += 1.0;
                if matches > max {
                    break;
                }
            }
        }
        let within = matches >= min && matches <= max;
        if !within {
            out.push(RawIssue::new(path, Failure::Contains { min, max }));
        }
        within
    }

    /// Walk every `(key, (value, schema))`, each at its key (a property name
    /// or an array index) below `path`; all of them report (no short cut).
    fn walk_children<'a, K: ToString>(
        &self,
        dialect: &Dialect,
        pairs: impl Iterator<Item = (K, (&'a Value, &'a Value))>,
        path: &str,
        depth: usize,
        out: &mut Vec<RawIssue>,
    ) -> bool {
        let mut ok = true;
        for (key, (value, schema)) in pairs {
            ok &= self.walk(
                dialect,
                schema,
                value,
                &dialect.child(path, &key.to_string()),
                depth + 1,
                out,
            );
        }
        ok
    }

    /// The string keywords, in the order of `dialect.string`.
    pub(super) fn walk_string(
        &self,
        dialect: &Dialect,
        keywords: &Map<String, Value>,
        text: &str,
        path: &str,
        out: &mut Vec<RawIssue>,
    ) -> bool {
        let mut ok = true;
        let length = std::cell::OnceCell::new();
        let length = || *length.get_or_init(|| dialect.length_of(text));
        for step in dialect.string {
            match step {
                StringStep::MinLength => ok &= MIN_LENGTH.check(keywords, length(), path, out),
                StringStep::MaxLength => ok &= MAX_LENGTH.check(keywords, length(), path, out),
                StringStep::Format => {
                    if let Some(Value::String(format)) = keywords.get("format")
                        && let Some(validator) = self.formats.get(format)
                        && !validator.is_valid(&Value::String(text.to_owned()))
                    {
                        out.push(RawIssue::new(path, Failure::Format(format.clone())));
                        ok = false;
                    }
                }
                StringStep::Pattern => {
                    if let Some(Value::String(pattern)) = keywords.get("pattern")
                        && !self.regex_matches(pattern, text)
                    {
                        out.push(RawIssue::new(path, Failure::Pattern(pattern.clone())));
                        ok = false;
                    }
                }
            }
        }
        ok
    }

    /// `if`/`then`/`else`. TypeBox keeps a failing `then`'s issues inside and shows its line
    /// alone; a failing `else` shows its issues, then its line. pi-schema shows the failing
    /// branch's issues alone.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn walk_if(
        &self,
        dialect: &Dialect,
        keywords: &Map<String, Value>,
        condition: &Value,
        value: &Value,
        path: &str,
        depth: usize,
        out: &mut Vec<RawIssue>,
    ) -> bool {
        let holds = self.check_as(dialect, condition, value);
        let (branch, failure) = if holds {
            (keywords.get("then"), Failure::Then)
        } else {
            (keywords.get("else"), Failure::Else)
        };
        let Some(branch) = branch.filter(|s| is_schema(s)) else {
            return true;
        };
        let passed = if holds && dialect.conditional_summary {
            let mut sink = Vec::new();
            self.walk(dialect, branch, value, path, depth + 1, &mut sink)
        } else {
            self.walk(dialect, branch, value, path, depth + 1, out)
        };
        if !passed && dialect.conditional_summary {
            out.push(RawIssue::new(path, failure));
        }
        passed
    }

    /// Unanchored search, like JavaScript's `RegExp.prototype.test`. A pattern that could not
    /// be compiled (so `compile` would have failed on it) does not reject anything.
    pub(super) fn regex_matches(&self, pattern: &str, text: &str) -> bool {
        self.patterns
            .get(pattern)
            .is_none_or(|validator| validator.is_valid(&Value::String(text.to_owned())))
    }

    /// Local references only (`#` and `#/json/pointer`); others are left to the backstop.
    pub(super) fn resolve_ref(&self, reference: &str) -> Option<&Value> {
        let fragment = reference.strip_prefix('#')?;
        if fragment.is_empty() {
            return Some(&self.schema);
        }
        if !fragment.starts_with('/') {
            return None;
        }
        self.schema.pointer(&percent_decode(fragment)?)
    }
}

/// A missing dependency of `property`, whose list is `names`.
fn missing_dependency(property: &str, names: &[Value]) -> Failure {
    Failure::Dependency {
        property: property.to_owned(),
        names: names
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
    }
}

/// The number keywords, in the order of `dialect.number`.
pub(super) fn walk_number(
    dialect: &Dialect,
    keywords: &Map<String, Value>,
    number: f64,
    path: &str,
    out: &mut Vec<RawIssue>,
) -> bool {
    let mut ok = true;
    for step in dialect.number {
        ok &= match step {
            NumberStep::Minimum => check_limit(
                keywords,
                "minimum",
                |limit| number >= limit,
                Failure::Minimum,
                path,
                out,
            ),
            NumberStep::Maximum => check_limit(
                keywords,
                "maximum",
                |limit| number <= limit,
                Failure::Maximum,
                path,
                out,
            ),
            NumberStep::ExclusiveMinimum => check_limit(
                keywords,
                "exclusiveMinimum",
                |limit| number > limit,
                Failure::ExclusiveMinimum,
                path,
                out,
            ),
            NumberStep::ExclusiveMaximum => check_limit(
                keywords,
                "exclusiveMaximum",
                |limit| number < limit,
                Failure::ExclusiveMaximum,
                path,
                out,
            ),
            NumberStep::MultipleOf => check_limit(
                keywords,
                "multipleOf",
                |divisor| dialect.is_multiple(number, divisor),
                Failure::MultipleOf,
                path,
                out,
            ),
        };
    }
    ok
}

/// A count limit: its keyword, its failure, and whether the count must be
/// at least (or else at most) the keyword's number.
struct Count(&'static str, fn(f64) -> Failure, bool);

const MIN_PROPERTIES: Count = Count("minProperties", Failure::MinProperties, true);
const MAX_PROPERTIES: Count = Count("maxProperties", Failure::MaxProperties, false);
const MIN_ITEMS: Count = Count("minItems", Failure::MinItems, true);
const MAX_ITEMS: Count = Count("maxItems", Failure::MaxItems, false);
const MIN_LENGTH: Count = Count("minLength", Failure::MinLength, true);
const MAX_LENGTH: Count = Count("maxLength", Failure::MaxLength, false);

impl Count {
    /// Whether `count` keeps the limit, if `keywords` sets it.
    fn check(
        &self,
        keywords: &Map<String, Value>,
        count: f64,
        path: &str,
        out: &mut Vec<RawIssue>,
    ) -> bool {
        let &Count(keyword, failure, least) = self;
        let holds = |limit| {
            if least {
                count >= limit
            } else {
                count <= limit
            }
        };
        check_limit(keywords, keyword, holds, failure, path, out)
    }
}

/// One keyword holding a number (a bound, a count limit, a divisor): whether the value keeps
/// it (`holds(limit)`), reporting `failure(limit)` when it does not. An absent keyword holds.
fn check_limit(
    keywords: &Map<String, Value>,
    keyword: &str,
    holds: impl FnOnce(f64) -> bool,
    failure: fn(f64) -> Failure,
    path: &str,
    out: &mut Vec<RawIssue>,
) -> bool {
    let Some(limit) = number_keyword(keywords, keyword) else {
        return true;
    };
    if holds(limit) {
        return true;
    }
    out.push(RawIssue::new(path, failure(limit)));
    false
}

/// TypeBox's `IsMultipleOf`: integers are multiples of any divisor whose reciprocal is an
/// integer; otherwise the remainder must be within 1e-10 of 0 or of the divisor.
pub(super) fn is_multiple_of(dividend: f64, divisor: f64) -> bool {
    if dividend.fract() == 0.0 && (1.0 / divisor) % 1.0 == 0.0 {
        return true;
    }
    let remainder = dividend % divisor;
    remainder
        .abs()
        .min((remainder - divisor).abs())
        .min((remainder + divisor).abs())
        < 1e-10
}
