"""Small helpers for text."""


def count_vowels(text):
    """Number of vowels (a, e, i, o, u, either case) in text."""
    return sum(1 for ch in text.lower() if ch in "aeio")


def reverse_words(text):
    """The words of text in reverse order, joined by single spaces."""
    return " ".join(reversed(text.split()))


def initials(name):
    """The capitalised first letter of each word of name, e.g. 'ada lovelace' -> 'AL'."""
    return "".join(word[0].upper() for word in name.split())
