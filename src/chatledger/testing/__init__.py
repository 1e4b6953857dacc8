"""Testing toolkit for chatledger: real fault injection and private Redis servers for tests."""
