#pragma once
// Small string helpers that the standard library lacks.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mka::strings {

std::vector<std::string> split(std::string_view text, char separator);
std::string join(const std::vector<std::string>& parts, std::string_view separator);
std::string_view trim(std::string_view text);
// `text` with each byte passed through std::tolower ("PipelineRun" -> "pipelinerun").
std::string toLower(std::string text);

// Edit distance counting insertions, deletions, substitutions and swaps of two adjacent
// characters (optimal string alignment), compared case-insensitively: "prot" is one edit from
// "port", as a reader would count it.
std::size_t editDistance(std::string_view a, std::string_view b);
// The candidate closest to `word` when it is close enough to be a likely typo (case-only
// differences always match, e.g. "multikueue" -> "multiKueue"); nullopt otherwise.
std::optional<std::string> didYouMean(std::string_view word, const std::vector<std::string>& candidates);

// `value` in double quotes for an error message, cut after `maxChars` bytes with "..." inside
// the quotes, so that a long untrusted value cannot swamp the message.
std::string quotedExcerpt(std::string_view value, std::size_t maxChars = 64);
// `text` with its control bytes (0x00-0x1F, 0x7F) written as \n, \r, \t or \xNN, so that a
// message echoing untrusted bytes cannot move a terminal's cursor or forge a log line.
std::string escapeControlBytes(std::string_view text);

// Escapes a JSON-pointer reference token (RFC 6901): '~' -> "~0", '/' -> "~1".
std::string escapeJsonPointer(std::string_view token);

}  // namespace mka::strings
