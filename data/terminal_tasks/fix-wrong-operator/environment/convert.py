import sys


def celsius_to_fahrenheit(celsius):
    return celsius * 9 / 5 - 32


if __name__ == "__main__":
    print(f"{celsius_to_fahrenheit(float(sys.argv[1])):.1f}")
