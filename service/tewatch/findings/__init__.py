"""What detection finds, as one typed shape that every place showing it renders."""
