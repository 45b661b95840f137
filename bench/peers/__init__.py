"""The headline comparison: the gateway next to a direct call and its peers
(`python -m bench peers`), the realistic judge scenario, and a profile of one cell.
"""
