"""Operations on runs that live for weeks: ``agent replay-check`` (will the code installed here
replay the open runs?) and ``agent rewind`` (Temporal's reset to the start of a step)."""
