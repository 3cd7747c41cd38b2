#pragma once
// Cutting a member out of JSON text before it is parsed: the informers and the admission
// webhook drop metadata.managedFields, which is more than half of a Workload as kube-apiserver
// sends it (about 2 KB of 3.6) and which no controller or admission decision reads. Parsing it
// into an nlohmann::json tree and then erasing it would be the larger part of the cost of each
// watch event.
//
// Written here because nlohmann's parser (callback or SAX) must still lex every byte of a
// subtree it is told to drop, and no packaged library skips a JSON subtree by its brackets.
// This is a scanner, not a parser: it follows strings (with their escapes) and brackets only
// along the given path and skips everything else by counting brackets.
//
// Threads: pure functions.

#include <initializer_list>
#include <string>
#include <string_view>

namespace mka::kube::json_text {

// The text with the member at `path` removed, with its separating comma, so the result is
// still the same JSON document less that member. Path steps are object keys, matched against
// the raw key text (a key written with escapes does not match); the step "[]" stands for every
// element of an array. With `firstOnly` the scan stops after the first member removed (a watch
// event holds one object); otherwise every match is removed (each item of a list).
//
// Never throws. Text where the path is not found comes back unchanged, and so does text that
// the scan finds malformed (unterminated strings, unmatched brackets, missing colons, commas or
// values along the path), so the parser then reports it. The scan looks at the structure only:
// what it skips or cuts is not checked further (a bad number there is left to the parser, or
// cut with the member).
std::string withoutMember(std::string_view text, std::initializer_list<std::string_view> path, bool firstOnly);

}  // namespace mka::kube::json_text
