import unittest

from textutils import count_vowels, initials, reverse_words


class CountVowelsTest(unittest.TestCase):
    def test_lowercase(self):
        self.assertEqual(count_vowels("hello world"), 3)

    def test_every_vowel(self):
        self.assertEqual(count_vowels("education"), 5)

    def test_uppercase(self):
        self.assertEqual(count_vowels("QUEUE"), 4)

    def test_no_vowels(self):
        self.assertEqual(count_vowels("rhythm"), 0)


class ReverseWordsTest(unittest.TestCase):
    def test_three_words(self):
        self.assertEqual(reverse_words("one two three"), "three two one")

    def test_extra_spaces(self):
        self.assertEqual(reverse_words("  a   b "), "b a")


class InitialsTest(unittest.TestCase):
    def test_two_words(self):
        self.assertEqual(initials("ada lovelace"), "AL")

    def test_one_word(self):
        self.assertEqual(initials("Turing"), "T")


if __name__ == "__main__":
    unittest.main()
